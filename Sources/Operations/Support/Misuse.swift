import Foundation

/// Programmer errors: the process stops with a message naming the object and the rule.
///
/// `fatalError` rather than `precondition` so that the message is printed in release
/// builds too.
enum Misuse {
    /// A warning on standard error, for what Darwin allows but is almost always a mistake.
    static func warn(_ message: String) {
        FileHandle.standardError.write(Data("Operations: warning: \(message)\n".utf8))
    }

    static func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
        fatalError("Operations: \(message)", file: file, line: line)
    }
}
