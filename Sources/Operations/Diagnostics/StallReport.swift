import Dispatch

/// Waits on a semaphore for a `waitUntil…` call, reporting once (a ``OperationDiagnostic/Kind/stall``)
/// when what it waits for cannot make progress.
///
/// No timer and no thread of its own: the waiting thread waits with a timeout of
/// ``OperationDiagnostic/stallReportDelay`` (doubling, up to a minute) and looks each time
/// it expires (a look may skip the analysis: ``StallLooks``), until it has reported once.
/// With a delay of zero it looks once before it waits, at the moment the wait begins.
/// (`async` waits have no thread to look with: `AsyncStallWatch` looks for them.)
struct StallReport {
    /// The waiting call; described only when a report is made (waits are frequent).
    enum Call: Sendable {
        case waitUntilFinished(Operation)
        case waitUntilAllOperationsAreFinished(OperationQueue)
        case addOperations(OperationQueue)
        /// A task awaiting an operation: `value`, `values`, `waitUntilFinished()`, `perform`.
        case awaitOperation(Operation)
        case awaitWaitUntilAllOperationsAreFinished(OperationQueue)
        /// A task in `enqueue(_:)`, waiting for room.
        case awaitEnqueue(OperationQueue)
        /// A loop over `OperationResults`: made by `results(adding:)` on the queue, or over
        /// operations added elsewhere (nil).
        case awaitResults(OperationQueue?, count: Int)

        /// Whether the wait ends only when every operation it waits for has finished (one
        /// that cannot make progress stalls it), rather than when any has (room in a queue:
        /// stalled only when none can make progress).
        var waitsForEvery: Bool {
            if case .awaitEnqueue = self { return false }
            return true
        }

        /// What the call waits for, when the call alone says: its operation, or every
        /// member of its queue (a wait held up by one names it).
        /// Empty when the waiting code knows (the operations of a batch or a loop).
        var targets: [Operation] {
            switch self {
            case .waitUntilFinished(let operation), .awaitOperation(let operation): [operation]
            case .waitUntilAllOperationsAreFinished(let queue), .awaitWaitUntilAllOperationsAreFinished(let queue),
                .awaitEnqueue(let queue):
                queue._members
            case .addOperations, .awaitResults: []
            }
        }

        /// The finishes counted by the queue whose operations the call waits for (all of
        /// them, a batch, room); nil for a wait for one operation, or with no queue. See
        /// ``StallLooks``.
        var progressMark: UInt64? {
            let queue: OperationQueue? =
                switch self {
                case .waitUntilFinished, .awaitOperation: nil
                case .waitUntilAllOperationsAreFinished(let queue), .awaitWaitUntilAllOperationsAreFinished(let queue),
                    .addOperations(let queue), .awaitEnqueue(let queue):
                    queue
                case .awaitResults(let queue, _): queue
                }
            return queue?._snapshot.progressStamp
        }

        static func operations(_ count: Int) -> String {
            count == 1 ? "1 operation" : "\(count) operations"
        }

        var description: String {
            switch self {
            case .waitUntilFinished(let operation): "waitUntilFinished() on \(operation._misuseName)"
            case .waitUntilAllOperationsAreFinished(let queue): "waitUntilAllOperationsAreFinished() on \(queue._misuseName)"
            case .addOperations(let queue): "addOperations(_:waitUntilFinished: true) on \(queue._misuseName)"
            case .awaitOperation(let operation): "a task awaiting \(operation._misuseName)"
            case .awaitWaitUntilAllOperationsAreFinished(let queue):
                "a task awaiting waitUntilAllOperationsAreFinished() on \(queue._misuseName)"
            case .awaitEnqueue(let queue): "a task waiting for room in enqueue(_:) on \(queue._misuseName)"
            case .awaitResults(let queue?, let count):
                "a loop over results(adding:) of \(Self.operations(count)) on \(queue._misuseName)"
            case .awaitResults(nil, let count): "a loop over OperationResults of \(Self.operations(count))"
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
        // Announcements this thread was handed back would otherwise run only after the wait:
        // what it waits for may be among them.
        NestedAnnouncements.runHandedBack()
        // A wait from inside a running operation: the analysis follows it through that one.
        BlockedWaits.during(targets: targets) { waitReporting(on: semaphore, targets: targets) }
    }

    private mutating func waitReporting(on semaphore: DispatchSemaphore, targets: () -> [Operation]) {
        var delay = OperationDiagnostic.stallReportDelay
        if delay == .zero {
            look(targets(), waited: nil)
            semaphore.wait()
            return
        }
        var waited = Duration.zero
        var looks = StallLooks(beganAt: call.progressMark)
        while !hasReported {
            if semaphore.wait(timeout: .now() + .nanoseconds(Self.nanoseconds(delay))) == .success { return }
            waited += delay
            if looks.analyses(at: call.progressMark, afterLongestInterval: delay >= Self.longestInterval) {
                look(targets(), waited: waited)
            }
            delay = min(delay * 2, Self.longestInterval)
        }
        semaphore.wait()
    }

    private mutating func look(_ targets: [Operation], waited: Duration?) {
        guard !hasReported else { return }
        hasReported = Self.report(call, stuck: StallAnalysis.stuck(among: targets), waited: waited)
    }

    /// Reports that `call` waits for operations that cannot make progress (`stuck`, from
    /// `StallAnalysis`), after `waited` (nil: at the moment it began); does nothing and
    /// returns false when `stuck` is empty.
    @discardableResult
    static func report(_ call: Call, stuck: [(operation: Operation, cause: StallAnalysis.Cause)], waited: Duration?) -> Bool {
        guard !stuck.isEmpty else { return false }
        let time = waited.map { " has waited \(Self.seconds($0)) s and" } ?? ""
        OperationDiagnostic.emit(.stall, "\(call.description)\(time) waits for \(Call.operations(stuck.count)) that cannot make progress: \(StallAnalysis.describe(stuck))")
        return true
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
