package io.binlake.jsonbinary;

import com.github.shyiko.mysql.binlog.event.deserialization.json.JsonBinary;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * Reads MySQL binary JSON documents, one per line in hex, from stdin and writes, for each, one
 * line: "ok " and the hex of the UTF-8 bytes of JsonBinary.parseAsString(document) (the call
 * Debezium makes for a JSON column), or "error " and the exception. Hex on both sides keeps
 * every byte of the text, newlines and invalid sequences included, out of the line framing.
 */
public final class ParseAsString {
    private ParseAsString() {
    }

    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.US_ASCII));
        for (String line; (line = in.readLine()) != null;) {
            String result;
            try {
                String text = JsonBinary.parseAsString(hex.parseHex(line.trim()));
                result = "ok " + hex.formatHex(text.getBytes(StandardCharsets.UTF_8));
            }
            catch (Exception | StackOverflowError e) {
                result = "error " + e.toString().replace('\n', ' ');
            }
            out.write(result);
            out.write('\n');
        }
        out.flush();
    }
}
