// How messages name an operation.

extension Operation {
    /// How cycle descriptions name the operation: `"name"`, or `<Type: 0x…>`.
    package final var _shortName: String {
        if let name { return "\"\(name)\"" }
        return "<\(type(of: self)): \(_address)>"
    }

    /// How misuse messages name the operation.
    package final var _misuseName: String {
        if let name { return "operation \"\(name)\" (\(type(of: self)))" }
        return "operation <\(type(of: self)): \(_address)>"
    }
}
