import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader and writer, enough for Croupier's answers (protobuf's JSON mapping): objects
 * are {@code Map<String, Object>} in their order, arrays {@code List<Object>}, strings, {@code
 * Boolean}, {@code null}, and numbers as {@code Long} (or {@code BigInteger} past a long, {@code
 * Double} with a fraction or an exponent).
 *
 * <p>What protobuf's JSON mapping means for a reader (README, "Clients in other languages"):
 * 64-bit fields (versions, {@code *Ms} times, settlement amounts) come as strings ({@code
 * "version": "2"}), read them with {@link #int64}; a field at its default (0, "", false, empty) is
 * left out (seat 0 among them), so read with a default ({@link #integer}, {@link #string}, {@link
 * #list}, {@link #object}).
 */
final class Json {
  private final String text;
  private int at;

  private Json(String text) {
    this.text = text;
  }

  /** The value the text holds; IllegalArgumentException when it is not JSON. */
  static Object parse(String text) {
    Json reader = new Json(text);
    reader.skipSpace();
    Object value = reader.value();
    reader.skipSpace();
    if (reader.at != text.length()) {
      throw reader.error("text after the value");
    }
    return value;
  }

  /** The JSON text of a value built of maps, lists, strings, numbers, booleans and null. */
  static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(value, out);
    return out.toString();
  }

  // ---- Reading fields with protobuf's defaults ---------------------------------------------

  /** {@code object.get(name)} as an object; absent: empty. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> object(Map<String, Object> object, String name) {
    Object value = object == null ? null : object.get(name);
    return value == null ? Map.of() : (Map<String, Object>) value;
  }

  /** {@code object.get(name)} as a list; absent (an empty repeated field): empty. */
  @SuppressWarnings("unchecked")
  static List<Object> list(Map<String, Object> object, String name) {
    Object value = object == null ? null : object.get(name);
    return value == null ? List.of() : (List<Object>) value;
  }

  /** A string field; absent: "". */
  static String string(Map<String, Object> object, String name) {
    Object value = object == null ? null : object.get(name);
    return value == null ? "" : (String) value;
  }

  /** A bool field; absent: false. */
  static boolean bool(Map<String, Object> object, String name) {
    Object value = object == null ? null : object.get(name);
    return value != null && (Boolean) value;
  }

  /** A 32-bit field (a seat, a count); absent: 0. */
  static int integer(Map<String, Object> object, String name) {
    return Math.toIntExact(int64(object == null ? null : object.get(name)));
  }

  /** A 64-bit field (a version, a time, an amount): a string in JSON, absent: 0. */
  static long int64(Map<String, Object> object, String name) {
    return int64(object == null ? null : object.get(name));
  }

  /** A 64-bit value as JSON carries it: a string ("12"), a number, or absent (0). */
  static long int64(Object value) {
    if (value == null) {
      return 0;
    }
    if (value instanceof String s) {
      return Long.parseLong(s);
    }
    return ((Number) value).longValue();
  }

  /** The name of the one member a oneof object holds ({"gin": {...}} is "gin"). */
  static String oneof(Map<String, Object> object) {
    if (object.size() != 1) {
      throw new IllegalArgumentException("a oneof holds one member, not " + object.keySet());
    }
    return object.keySet().iterator().next();
  }

  // ---- The reader ----------------------------------------------------------------------------

  private Object value() {
    if (at >= text.length()) {
      throw error("a value");
    }
    char c = text.charAt(at);
    switch (c) {
      case '{':
        return objectValue();
      case '[':
        return arrayValue();
      case '"':
        return stringValue();
      case 't':
        return literal("true", Boolean.TRUE);
      case 'f':
        return literal("false", Boolean.FALSE);
      case 'n':
        return literal("null", null);
      default:
        return number();
    }
  }

  private Map<String, Object> objectValue() {
    Map<String, Object> object = new LinkedHashMap<>();
    at++;
    skipSpace();
    if (peek('}')) {
      at++;
      return object;
    }
    while (true) {
      skipSpace();
      if (!peek('"')) {
        throw error("a member's name");
      }
      String name = stringValue();
      skipSpace();
      expect(':');
      skipSpace();
      object.put(name, value());
      skipSpace();
      if (peek(',')) {
        at++;
      } else {
        expect('}');
        return object;
      }
    }
  }

  private List<Object> arrayValue() {
    List<Object> array = new ArrayList<>();
    at++;
    skipSpace();
    if (peek(']')) {
      at++;
      return array;
    }
    while (true) {
      skipSpace();
      array.add(value());
      skipSpace();
      if (peek(',')) {
        at++;
      } else {
        expect(']');
        return array;
      }
    }
  }

  private String stringValue() {
    StringBuilder out = new StringBuilder();
    at++;
    while (true) {
      if (at >= text.length()) {
        throw error("the end of a string");
      }
      char c = text.charAt(at++);
      if (c == '"') {
        return out.toString();
      }
      if (c != '\\') {
        out.append(c);
        continue;
      }
      if (at >= text.length()) {
        throw error("an escape");
      }
      char escaped = text.charAt(at++);
      switch (escaped) {
        case '"', '\\', '/' -> out.append(escaped);
        case 'b' -> out.append('\b');
        case 'f' -> out.append('\f');
        case 'n' -> out.append('\n');
        case 'r' -> out.append('\r');
        case 't' -> out.append('\t');
        case 'u' -> {
          if (at + 4 > text.length()) {
            throw error("four hex digits");
          }
          // A character outside the BMP comes as two escapes (a surrogate pair): each is one
          // Java char, so appending them in turn makes the pair.
          out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
          at += 4;
        }
        default -> throw error("a known escape");
      }
    }
  }

  private Object number() {
    int start = at;
    boolean integral = true;
    while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
      integral &= Character.isDigit(text.charAt(at)) || text.charAt(at) == '-';
      at++;
    }
    if (start == at) {
      throw error("a value");
    }
    String digits = text.substring(start, at);
    if (!integral) {
      return Double.parseDouble(digits);
    }
    BigInteger value = new BigInteger(digits);
    return value.bitLength() < 64 ? (Object) value.longValue() : value;
  }

  private Object literal(String word, Object value) {
    if (!text.startsWith(word, at)) {
      throw error(word);
    }
    at += word.length();
    return value;
  }

  private boolean peek(char c) {
    return at < text.length() && text.charAt(at) == c;
  }

  private void expect(char c) {
    if (!peek(c)) {
      throw error("'" + c + "'");
    }
    at++;
  }

  private void skipSpace() {
    while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) {
      at++;
    }
  }

  private IllegalArgumentException error(String wanted) {
    return new IllegalArgumentException("not JSON: expected " + wanted + " at offset " + at);
  }

  // ---- The writer ----------------------------------------------------------------------------

  private static void write(Object value, StringBuilder out) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof String s) {
      writeString(s, out);
    } else if (value instanceof Boolean || value instanceof Integer || value instanceof Long) {
      out.append(value);
    } else if (value instanceof Map<?, ?> map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> entry : map.entrySet()) {
        if (!first) {
          out.append(',');
        }
        first = false;
        writeString((String) entry.getKey(), out);
        out.append(':');
        write(entry.getValue(), out);
      }
      out.append('}');
    } else if (value instanceof List<?> list) {
      out.append('[');
      for (int i = 0; i < list.size(); i++) {
        if (i > 0) {
          out.append(',');
        }
        write(list.get(i), out);
      }
      out.append(']');
    } else {
      throw new IllegalArgumentException("cannot write " + value.getClass() + " as JSON");
    }
  }

  private static void writeString(String s, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
