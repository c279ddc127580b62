package dev.hourglass.avro;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.avro.Schema;

/**
 * Reads one case per line from stdin: schema texts separated by tabs (the referenced schemas
 * first, the schema itself last; compact JSON holds no raw tab), all parsed by one
 * Schema.Parser as Confluent's AvroSchema does with references. Prints one line per case: the
 * last schema's toString(references, false), the form Confluent's AvroSchema.canonicalString()
 * keeps (referenced named types print as names), or "ERROR " and the parser's message.
 */
public final class AvroToString {
  private AvroToString() {}

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(System.out, true, "UTF-8");
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isEmpty()) {
        continue;
      }
      try {
        Schema.Parser parser = new Schema.Parser();
        String[] texts = line.split("\t");
        List<Schema> references = new ArrayList<>();
        for (int i = 0; i < texts.length - 1; i++) {
          references.add(parser.parse(texts[i]));
        }
        Schema schema = parser.parse(texts[texts.length - 1]);
        out.println(schema.toString(references, false));
      } catch (Exception e) {
        out.println("ERROR " + String.valueOf(e.getMessage()).replace('\n', ' '));
      }
    }
  }
}
