import Foundation

/// Programmer errors: the process stops with a message naming the object and the rule.
///
/// `fatalError` rather than `precondition` so that the message is printed in release
/// builds too. Both go through ``OperationDiagnostic/handler`` first.
package enum Misuse {
    /// A warning, for what Darwin allows but is almost always a mistake.
    package static func warn(_ message: String, kind: OperationDiagnostic.Kind = .warning) {
        OperationDiagnostic.emit(kind, message)
    }

    package static func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
        OperationDiagnostic.emit(.misuse, message)
        fatalError("Operations: \(message)", file: file, line: line)
    }
}
