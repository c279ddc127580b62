// Kafka's own answer to "who is this TLS client": the certificate subject as the JVM prints it
// (X500Principal.getName(), what DefaultKafkaPrincipalBuilder uses) and the name Kafka's
// SslPrincipalMapper (kafka-clients) makes of it under the given ssl.principal.mapping.rules.
//
//   PrincipalOracle RULES CERT.pem...   -> per certificate: {"dn":..,"name":..} or {"dn":..,"error":..}
// An invalid RULES string prints {"rulesError":..} once. Plain Java 17 over the client jars.

import org.apache.kafka.common.security.ssl.SslPrincipalMapper;

import java.io.FileInputStream;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;

public final class PrincipalOracle {
    public static void main(String[] args) throws Exception {
        SslPrincipalMapper mapper;
        try {
            mapper = SslPrincipalMapper.fromRules(args[0]);
        } catch (Exception e) {
            System.out.println("{\"rulesError\":" + q(e.getMessage()) + "}");
            return;
        }
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        for (int i = 1; i < args.length; i++) {
            X509Certificate cert;
            try (FileInputStream in = new FileInputStream(args[i])) {
                cert = (X509Certificate) cf.generateCertificate(in);
            }
            String dn = cert.getSubjectX500Principal().getName();
            try {
                System.out.println("{\"dn\":" + q(dn) + ",\"name\":" + q(mapper.getName(dn)) + "}");
            } catch (Exception e) {
                System.out.println("{\"dn\":" + q(dn) + ",\"error\":" + q(e.getClass().getSimpleName()) + "}");
            }
        }
    }

    private static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
