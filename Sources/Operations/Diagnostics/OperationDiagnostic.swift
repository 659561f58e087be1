import Foundation
import Synchronization

/// A message of the library about how it is used: a dependency cycle, a stalled wait, a
/// warning, or the description of a programmer error just before the process stops.
///
/// They go to ``handler``, which prints them on standard error unless you replace it (with
/// a logger, for example: the `OperationsLogging` product sends them to a swift-log
/// `Logger`).
public struct OperationDiagnostic: Sendable, CustomStringConvertible {
    /// What kind of message it is; a struct so that kinds can be added.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as in `"stall"`.
        public let name: String

        /// `addDependency` closed a dependency cycle (allowed, as on Darwin).
        public static let dependencyCycle = Kind(name: "dependency-cycle")
        /// A wait, blocking (`waitUntil…`) or `async` (`value`, `waitUntilFinished()`, a loop
        /// over `results(adding:)`, …), waits for operations that cannot make progress.
        public static let stall = Kind(name: "stall")
        /// A programmer error: the process stops right after the handler returns.
        public static let misuse = Kind(name: "misuse")
        /// Something Darwin allows but is almost always a mistake.
        public static let warning = Kind(name: "warning")

        /// The kind's name.
        public var description: String { name }
    }

    /// What kind of message it is.
    public let kind: Kind
    /// The message, one line, naming the operations and queues involved.
    public let message: String

    /// Makes a diagnostic (for handlers that forward or test them).
    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// `Operations: warning: <message>` (or `error:` for ``Kind/misuse``).
    public var description: String {
        "Operations: \(kind == .misuse ? "error" : "warning"): \(message)"
    }

    /// Receives the library's diagnostics, on the thread where they happen, with no lock
    /// of the library held.
    public typealias Handler = @Sendable (OperationDiagnostic) -> Void

    /// Prints diagnostics on standard error, one line each. Misuse is left to the trap that
    /// follows, which prints it.
    public static let standardError: Handler = { diagnostic in
        guard diagnostic.kind != .misuse else { return }
        FileHandle.standardError.write(Data("\(diagnostic)\n".utf8))
    }

    /// Where diagnostics go; ``standardError`` unless replaced. Process-wide.
    public static var handler: Handler {
        get { settings.withLock { $0.handler } }
        set { settings.withLock { $0.handler = newValue } }
    }

    /// How long a wait (a `waitUntil…` call, or an `async` wait that suspended) waits on
    /// operations that cannot make progress before it reports a ``Kind/stall``: 2 seconds by
    /// default (others may still resume a queue or start an operation); `.zero` reports at
    /// the moment the wait begins. Later looks come at doubling intervals, up to a minute;
    /// a wait for a queue's operations skips the analysis at a look after its queue
    /// finished something, except after a minute's interval. Process-wide; read when a wait
    /// begins.
    public static var stallReportDelay: Duration {
        get { .nanoseconds(stallReportNanoseconds.load(ordering: .relaxed)) }
        set { stallReportNanoseconds.store(Int64(StallReport.nanoseconds(max(newValue, .zero))), ordering: .relaxed) }
    }

    struct Settings {
        var handler: Handler = OperationDiagnostic.standardError
    }

    static let settings = Locked(Settings())
    /// Read by every wait: an atomic, not the settings' lock.
    static let stallReportNanoseconds = Atomic<Int64>(2_000_000_000)

    /// Hands a diagnostic to the handler (read under the lock, called after it).
    static func emit(_ kind: Kind, _ message: String) {
        let handler = settings.withLock { $0.handler }
        handler(OperationDiagnostic(kind: kind, message: message))
    }
}
