import Operations
import OperationsRecording

/// 2. One BlockOperation, one execution block per word, each taking one unit: the blocks
/// overlap, and the completion block runs after the last.
public struct BlocksChapter: Chapter {
    public static let name = "blocks"
    public static let title = "blocks: a BlockOperation's blocks run concurrently"
    public init() {}

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let sentence = "Operation queues make concurrency easy to reason about"
        let words = sentence.split(separator: " ").map(String.init)
        let log = Protected<[String]>()
        let running = Protected<Int>(), most = Protected<Int>()
        let recorder = OperationRecorder(title: "Blocks: \(words.count) execution blocks of one unit")
        let operation = BlockOperation()
        operation.name = "sentence"
        for (index, word) in words.enumerated() {
            // Each block timed as a part of the operation: the timeline draws them as bars of
            // their own under its one bar, overlapping.
            operation.addExecutionBlock { [unowned operation] in
                recorder.recordPart("block \(index + 1): \(word)", of: operation) {
                    most.raise(to: running.increment())
                    context.work()
                    running.decrement()
                    log.append(word)
                }
            }
        }
        let completed = DispatchSemaphore(value: 0)
        operation.completionBlock = {
            log.append("<completion>")
            completed.signal()
        }
        let queue = OperationQueue()
        queue.name = "blocks"
        recorder.record(queue)
        let start = Date()
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        completed.wait()
        let elapsed = seconds(since: start)
        result.numbers["seconds"] = elapsed
        result.numbers["units"] = elapsed / context.settings.unit
        result.numbers["most at once"] = Double(most.current)
        result.lists["order"] = log.current
        let line = String(format: "%d blocks of one unit each took %.2f s (≈ %.1f units: they overlap); finished: %@", words.count, elapsed, elapsed / context.settings.unit, log.current.joined(separator: " "))
        context.console.say("   " + line)
        context.console.say("   (Linux's own Foundation runs them one after another: ≈ \(words.count) units.)")
        try context.writeRecording(recorder, chapter: "2-blocks", notes: [line], into: &result)
        return result
    }
}
