import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs Kafka's command-line tools (their main classes) one after another in one JVM, for the
 * tests (tests/helpers/tool_jvm.py): a tool run costs a call instead of a JVM start, which on a
 * busy 2-core machine is about two seconds of CPU each (class loading and JIT of the admin
 * client), times the hundreds of tool runs and Kafka storage formats in the suite.
 *
 * <p>Protocol, one line each way: request {@code MAIN<TAB>ARG...}, each field URL-encoded;
 * answer {@code EXIT_CODE<TAB>base64(stdout)<TAB>base64(stderr)}. The answers go to the
 * process's real stdout. Each run is a thread named "main" of its own; System.out and
 * System.err write to the buffers of the run whose thread (or a thread it started) writes, so
 * a thread a tool left running never writes into a later run's output. Kafka's Exit.exit ends
 * the run with its code and, as the end of a process would, stops the calling thread there (it
 * parks for good). A tool calling System.exit ends this JVM: the Python side reports it as an
 * error, and does not run the tool again.
 */
public final class ToolRunner {
    /** One tool run: its buffers and, once known, its exit code. */
    static final class Run {
        final ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        final CompletableFuture<Integer> code = new CompletableFuture<>();
    }

    /** The run the current thread works for (inherited by the threads a tool starts). */
    static final InheritableThreadLocal<Run> RUN = new InheritableThreadLocal<>();

    /** System.out or System.err: the bytes go to the writing thread's run, or nowhere. */
    static final class Switch extends OutputStream {
        final boolean isErr;

        Switch(boolean isErr) { this.isErr = isErr; }

        OutputStream target() {
            Run r = RUN.get();
            return r == null ? OutputStream.nullOutputStream() : isErr ? r.err : r.out;
        }

        @Override public void write(int b) throws IOException {
            OutputStream t = target();
            synchronized (t) { t.write(b); }
        }

        @Override public void write(byte[] b, int off, int len) throws IOException {
            OutputStream t = target();
            synchronized (t) { t.write(b, off, len); }
        }
    }

    public static void main(String[] argv) throws Exception {
        PrintStream reply = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        BufferedReader requests = new BufferedReader(
                new InputStreamReader(new FileInputStream(FileDescriptor.in), StandardCharsets.UTF_8));
        System.setOut(new PrintStream(new Switch(false), true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(new Switch(true), true, StandardCharsets.UTF_8));
        System.setIn(new ByteArrayInputStream(new byte[0]));
        interceptExit();
        warmUp();
        serving = true;
        String line;
        while ((line = requests.readLine()) != null) {
            String[] fields = line.split("\t", -1);
            for (int i = 0; i < fields.length; i++) fields[i] = URLDecoder.decode(fields[i], StandardCharsets.UTF_8);
            Run run = new Run();
            RUN.set(run);
            Thread t = new Thread(() -> run(run, fields[0], Arrays.copyOfRange(fields, 1, fields.length)), "main");
            RUN.remove();
            t.setDaemon(true);
            t.start();
            int code = run.code.get();
            byte[] out, err;
            synchronized (run.out) { out = run.out.toByteArray(); }
            synchronized (run.err) { err = run.err.toByteArray(); }
            Base64.Encoder b64 = Base64.getEncoder();
            reply.println(code + "\t" + b64.encodeToString(out) + "\t" + b64.encodeToString(err));
        }
    }

    static void run(Run run, String mainClass, String[] args) {
        int code = 0;
        try {
            Method main = Class.forName(mainClass).getMethod("main", String[].class);
            main.invoke(null, (Object) args);
        } catch (InvocationTargetException ite) {
            uncaught(ite.getCause(), mainClass);
            code = 1;
        } catch (Throwable t) {
            uncaught(t, mainClass);
            code = 1;
        }
        System.out.flush();
        System.err.flush();
        run.code.complete(code);
    }

    /** As the JVM reports an exception out of main, without this runner's frames under it. */
    static void uncaught(Throwable t, String mainClass) {
        StackTraceElement[] frames = t.getStackTrace();
        for (int i = 0; i < frames.length; i++) {
            if (frames[i].getClassName().equals(mainClass) && frames[i].getMethodName().equals("main")) {
                t.setStackTrace(Arrays.copyOf(frames, i + 1));
                break;
            }
        }
        System.err.print("Exception in thread \"main\" ");
        t.printStackTrace();
    }

    static volatile boolean serving;

    /**
     * The end of a run with {@code code}, as the end of the process would be: the calling thread
     * stops here (it parks for good). Outside a ToolRunner JVM: the JVM halts with the code.
     */
    public static void exit(int code) {
        if (!serving) Runtime.getRuntime().halt(code);
        System.out.flush();
        System.err.flush();
        Run run = RUN.get();
        if (run != null) run.code.complete(code);
        while (true) LockSupport.park();
    }

    /** Kafka's Exit (clients' internals one, and the older public one where present) ends the run. */
    static void interceptExit() throws Exception {
        for (String name : new String[]{"org.apache.kafka.common.utils.internals.Exit",
                                        "org.apache.kafka.common.utils.Exit"}) {
            Class<?> exit;
            try {
                exit = Class.forName(name);
            } catch (ClassNotFoundException e) {
                continue;
            }
            for (String setter : new String[]{"setExitProcedure", "setHaltProcedure"}) {
                for (Method m : exit.getMethods()) {
                    if (!m.getName().equals(setter) || m.getParameterCount() != 1) continue;
                    Class<?> procedure = m.getParameterTypes()[0];
                    Object proxy = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[]{procedure},
                        (self, method, margs) -> {
                            if (method.getDeclaringClass() == Object.class) {
                                switch (method.getName()) {
                                    case "hashCode": return System.identityHashCode(self);
                                    case "equals": return self == margs[0];
                                    default: return "ToolRunner exit procedure";
                                }
                            }
                            exit((Integer) margs[0]);
                            return null;
                        });
                    m.invoke(null, proxy);
                }
            }
        }
    }

    /** Logging initialized once, before the first run, so its one-time notices land in no run's output. */
    static void warmUp() {
        try {
            Class.forName("org.slf4j.LoggerFactory").getMethod("getLogger", String.class).invoke(null, "ToolRunner");
        } catch (Throwable ignored) {
            // no slf4j on the classpath: nothing to initialize
        }
    }
}
