import InMemoryLogging
import Logging
import Operations
import OperationsLogging
import Testing

@Suite("Diagnostics to swift-log")
struct LoggingTests {
    @Test("each kind at its level, with its kind as metadata")
    func levels() {
        let memory = InMemoryLogHandler()
        let logger = Logger(label: "operations-test") { _ in memory }
        let handler = OperationDiagnostic.logging(to: logger)
        handler(OperationDiagnostic(kind: .stall, message: "waits for 1 operation that cannot make progress"))
        handler(OperationDiagnostic(kind: .misuse, message: "start() called twice"))
        handler(OperationDiagnostic(kind: .dependencyCycle, message: "closes a dependency cycle"))
        let entries = memory.entries
        #expect(entries.map(\.level) == [.warning, .critical, .warning])
        #expect(entries.map(\.message.description) == [
            "waits for 1 operation that cannot make progress", "start() called twice", "closes a dependency cycle",
        ])
        #expect(entries.map { $0.metadata["operations.diagnostic"]?.description } == ["stall", "misuse", "dependency-cycle"])
    }

    /// In a child process (an exit test): the handler is process-wide, and other tests
    /// replace it while they run.
    @Test("installed as the library's handler, a real cycle warning reaches the logger")
    func installed() async {
        await #expect(processExitsWith: .success) {
            let memory = InMemoryLogHandler()
            OperationDiagnostic.handler = OperationDiagnostic.logging(to: Logger(label: "operations-test") { _ in memory })
            let a = BlockOperation {}, b = BlockOperation {}
            a.name = "logged-a"
            b.name = "logged-b"
            a.addDependency(b)
            b.addDependency(a)
            // Broken again: it is also a retain cycle (a leak under LeakSanitizer).
            b.removeDependency(a)
            let entries = memory.entries
            guard entries.count == 1, entries[0].level == .warning,
                  entries[0].message.description.contains("\"logged-a\""),
                  entries[0].metadata["operations.diagnostic"]?.description == "dependency-cycle"
            else { fatalError("unexpected log entries: \(entries)") }
        }
    }
}
