/// Programmer errors: the process stops with a message naming the object and the rule.
///
/// `fatalError` rather than `precondition` so that the message is printed in release
/// builds too.
enum Misuse {
    static func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
        fatalError("Operations: \(message)", file: file, line: line)
    }
}
