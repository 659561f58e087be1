import Operations

/// 1. The printer queue: seven operations that each take one unit, on a default queue,
/// with `maxConcurrentOperationCount` 2 and 1, and with quality of service and priority.
public struct PrinterChapter: Chapter {
    public static let name = "printer"
    public static let title = "printer: seven operations, three concurrency limits"
    public init() {}

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let timeline = Timeline(title: "Printer: 7 operations of one unit each")
        var notes: [String] = []
        for (label, limit, expected) in [("default", -1, 1.0), ("limit 2", 2, 4.0), ("limit 1", 1, 7.0)] {
            let queue = OperationQueue()
            queue.name = "printer \(label)"
            queue.maxConcurrentOperationCount = limit
            timeline.watch(queue)
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
        // Quality of service does not reorder a serial queue; queuePriority does.
        for (label, configure) in [
            ("userInitiated QoS", { (operation: Operation) in operation.qualityOfService = .userInitiated }),
            ("veryHigh priority", { (operation: Operation) in operation.queuePriority = .veryHigh }),
        ] {
            let queue = OperationQueue()
            queue.name = "printer \(label)"
            queue.maxConcurrentOperationCount = 1
            queue.isSuspended = true
            timeline.watch(queue)
            let order = Protected<[String]>()
            for letter in "ABCDEFG" {
                let operation = BlockOperation { order.append(String(letter)); context.work(0.25) }
                operation.name = "print \(letter) (\(label))"
                if letter == "G" { configure(operation) }
                queue.addOperation(operation)
            }
            queue.isSuspended = false
            queue.waitUntilAllOperationsAreFinished()
            result.lists["\(label) order"] = order.current
            let line = "serial queue, G added last with \(label): started \(order.current.joined())"
            context.console.say("   " + line)
            notes.append(line)
        }
        notes.append("Quality of service says how important the work is to the system; it does not reorder a queue. queuePriority does, among ready operations.")
        try context.writeTimeline(timeline, chapter: "1-printer", notes: notes, into: &result)
        return result
    }
}

