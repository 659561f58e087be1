import Operations
import OperationsRecording

/// 1. The printer queue: seven operations that each take one unit, on a default queue,
/// with `maxConcurrentOperationCount` 2 and 1, and with quality of service and priority.
public struct PrinterChapter: Chapter {
    public static let name = "printer"
    public static let title = "printer: seven operations, three concurrency limits"
    public init() {}

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let recorder = OperationRecorder(title: "Printer: 7 operations of one unit each")
        var notes: [String] = []
        for (label, limit, expected) in [("default", -1, 1.0), ("limit 2", 2, 4.0), ("limit 1", 1, 7.0)] {
            let queue = OperationQueue()
            queue.name = "printer \(label)"
            queue.maxConcurrentOperationCount = limit
            recorder.record(queue)
            let order = Protected<[String]>()
            let start = Date()
            for letter in "ABCDEFG" {
                let operation = BlockOperation {
                    order.append(String(letter))
                    context.work()
                }
                operation.name = "print \(letter) (\(label))"
                queue.addOperation(operation)
            }
            queue.waitUntilAllOperationsAreFinished()
            let elapsed = seconds(since: start)
            result.numbers["\(label) seconds"] = elapsed
            result.numbers["\(label) units"] = elapsed / context.settings.unit
            result.lists["\(label) order"] = order.current
            let line = String(format: "%@: %.2f s, expected ≈ %.0f units = %.2f s; started %@", label, elapsed, expected, expected * context.settings.unit, order.current.joined())
            context.console.say("   " + line)
            notes.append(line)
        }
        // The priority experiment: G, added last, is more important. On a queue that is not
        // serial its quality of service chooses its priority band, so it starts at the first
        // free slot; a serial queue keeps first-in, first-out ("priorities don't work")
        // unless queuePriority itself is set.
        let experiments: [(label: String, limit: Int, queueQuality: QualityOfService?, suspended: Bool, configure: @Sendable (Operation) -> Void)] = [
            ("limit 2, userInitiated QoS", 2, nil, false, { $0.qualityOfService = .userInitiated }),
            ("background queue, limit 2, userInteractive QoS", 2, .background, true, { $0.qualityOfService = .userInteractive }),
            ("userInitiated QoS", 1, nil, true, { $0.qualityOfService = .userInitiated }),
            ("veryHigh priority", 1, nil, true, { $0.queuePriority = .veryHigh }),
        ]
        for experiment in experiments {
            let queue = OperationQueue()
            queue.name = "printer \(experiment.label)"
            queue.maxConcurrentOperationCount = experiment.limit
            if let quality = experiment.queueQuality { queue.qualityOfService = quality }
            queue.isSuspended = experiment.suspended
            recorder.record(queue)
            let order = Protected<[String]>()
            for letter in "ABCDEFG" {
                let operation = BlockOperation { order.append(String(letter)); context.work(0.25) }
                operation.name = "print \(letter) (\(experiment.label))"
                if letter == "G" { experiment.configure(operation) }
                queue.addOperation(operation)
            }
            queue.isSuspended = false
            queue.waitUntilAllOperationsAreFinished()
            result.lists["\(experiment.label) order"] = order.current
            let queueKind = experiment.limit == 1 ? "serial queue, " : ""
            let line = "\(queueKind)\(experiment.label) for G (added last): started \(order.current.joined())"
            context.console.say("   " + line)
            notes.append(line)
        }
        notes.append("On a queue that is not serial, an operation whose queuePriority was never set takes its priority band from its quality of service, so G starts at the first free slot. A serial queue stays first-in, first-out for quality of service; queuePriority reorders any queue, among ready operations.")
        try context.writeRecording(recorder, chapter: "1-printer", notes: notes, into: &result)
        return result
    }
}

