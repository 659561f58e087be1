import Dispatch

/// Waits on a semaphore for a `waitUntil…` call, reporting once (a ``OperationDiagnostic/Kind/stall``)
/// when what it waits for cannot make progress.
///
/// No timer and no thread of its own: the waiting thread waits with a timeout of
/// ``OperationDiagnostic/stallReportDelay`` (doubling, up to a minute) and looks each time
/// it expires, until it has reported once. With a delay of zero it looks once before it
/// waits, at the moment the wait begins.
struct StallReport {
    /// The waiting call; described only when a report is made (waits are frequent).
    enum Call {
        case waitUntilFinished(Operation)
        case waitUntilAllOperationsAreFinished(OperationQueue)
        case addOperations(OperationQueue)

        var description: String {
            switch self {
            case .waitUntilFinished(let operation): "waitUntilFinished() on \(operation._misuseName)"
            case .waitUntilAllOperationsAreFinished(let queue): "waitUntilAllOperationsAreFinished() on \(queue._misuseName)"
            case .addOperations(let queue): "addOperations(_:waitUntilFinished: true) on \(queue._misuseName)"
            }
        }
    }

    let call: Call
    private(set) var hasReported = false

    init(call: Call) {
        self.call = call
    }

    static let longestInterval = Duration.seconds(60)

    /// Waits until `semaphore` is signalled. `targets` lists what is waited for, read when
    /// a look is due.
    mutating func wait(on semaphore: DispatchSemaphore, targets: () -> [Operation]) {
        var delay = OperationDiagnostic.stallReportDelay
        if delay == .zero {
            look(targets(), waited: nil)
            semaphore.wait()
            return
        }
        var waited = Duration.zero
        while !hasReported {
            if semaphore.wait(timeout: .now() + .nanoseconds(Self.nanoseconds(delay))) == .success { return }
            waited += delay
            look(targets(), waited: waited)
            delay = min(delay * 2, Self.longestInterval)
        }
        semaphore.wait()
    }

    private mutating func look(_ targets: [Operation], waited: Duration?) {
        guard !hasReported else { return }
        let stuck = StallAnalysis.stuck(among: targets)
        guard !stuck.isEmpty else { return }
        hasReported = true
        let time = waited.map { " has waited \(Self.seconds($0)) s and" } ?? ""
        let count = stuck.count == 1 ? "1 operation" : "\(stuck.count) operations"
        OperationDiagnostic.emit(.stall, "\(call.description)\(time) waits for \(count) that cannot make progress: \(StallAnalysis.describe(stuck))")
    }

    static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(clamping: seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    static func seconds(_ duration: Duration) -> String {
        let value = Double(nanoseconds(duration)) / 1e9
        return value == value.rounded() ? "\(Int(value))" : "\(value)"
    }
}
