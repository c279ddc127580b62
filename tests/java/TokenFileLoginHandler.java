// A Java client login callback handler that hands the OAUTHBEARER mechanism the token in a file
// (JAAS options tokenFile and principal). Kafka's own signed-token login handler needs jose4j,
// which the test jars do not carry; with this one the stock client sends a signed JWT (or any
// token) exactly as it would from its secured handler.
//
//   sasl.login.callback.handler.class=TokenFileLoginHandler
//   sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required
//       tokenFile="/path/token.jwt" principal="alice";

import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.auth.SaslExtensionsCallback;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerTokenCallback;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;

public final class TokenFileLoginHandler implements AuthenticateCallbackHandler {
    private String file;
    private String principal;

    @Override
    public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {
        Map<String, ?> options = entries.get(0).getOptions();
        file = (String) options.get("tokenFile");
        principal = (String) options.get("principal");
    }

    @Override
    public void handle(Callback[] callbacks) throws IOException, UnsupportedCallbackException {
        for (Callback cb : callbacks) {
            if (cb instanceof OAuthBearerTokenCallback) {
                String value = Files.readString(Path.of(file)).trim();
                long now = System.currentTimeMillis();
                ((OAuthBearerTokenCallback) cb).token(new OAuthBearerToken() {
                    public String value() { return value; }
                    public Set<String> scope() { return Set.of(); }
                    public long lifetimeMs() { return now + 3_600_000L; }
                    public String principalName() { return principal; }
                    public Long startTimeMs() { return now; }
                });
            } else if (!(cb instanceof SaslExtensionsCallback)) {
                throw new UnsupportedCallbackException(cb);
            }
        }
    }

    @Override
    public void close() {
    }
}
