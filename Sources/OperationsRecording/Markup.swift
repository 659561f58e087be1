/// Escaping and number formatting shared by the writers.
enum Markup {
    /// Text for XML and HTML (content and attribute values).
    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default:
                // Control characters are not allowed in XML 1.0.
                if character.value < 0x20, character != "\n", character != "\t" { result += " " } else { result.unicodeScalars.append(character) }
            }
        }
        return result
    }

    /// A number with one decimal, as SVG coordinates: `12.5`.
    static func number(_ value: Double) -> String {
        let tenths = (value * 10).rounded()
        let whole = Int(tenths) / 10, fraction = abs(Int(tenths)) % 10
        if fraction == 0 { return "\(whole)" }
        return (tenths < 0 && whole == 0 ? "-" : "") + "\(whole).\(fraction)"
    }

    /// A duration for a person: `850 µs`, `12.3 ms`, `1.20 s`.
    static func duration(_ nanoseconds: UInt64) -> String {
        let value = Double(nanoseconds)
        if value < 1e6 { return "\(Int((value / 1e3).rounded())) µs" }
        if value < 1e9 { return "\(fixed(value / 1e6, digits: 1)) ms" }
        return "\(fixed(value / 1e9, digits: 2)) s"
    }

    /// Seconds with two decimals: `1.20 s`.
    static func seconds(_ nanoseconds: UInt64) -> String {
        "\(fixed(Double(nanoseconds) / 1e9, digits: 2)) s"
    }

    static func fixed(_ value: Double, digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale), fraction = scaled % Int(scale)
        let fractionText = String(fraction)
        return "\(whole)." + String(repeating: "0", count: digits - fractionText.count) + fractionText
    }

    /// A JSON string literal.
    static func json(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}
