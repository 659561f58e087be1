import Operations
import OperationsRecording

/// 7. Groups: a composite class owning a private queue (many small sums, cancelled
/// part-way), and four image providers cancelled part-way so only some images arrive.
public struct GroupsChapter: Chapter {
    public static let name = "groups"
    public static let title = "groups: composite operations owning private queues"
    public init() {}

    /// Many small sums on a private queue, summed up at the end.
    final class SumGroup: Sendable {
        let queue = OperationQueue()
        let parts: [BlockOperation]
        /// Signalled when `quarter` parts have succeeded.
        let quarterDone = DispatchSemaphore(value: 0)

        init(parts count: Int, context: TourContext) {
            queue.name = "sum group"
            queue.maxConcurrentOperationCount = 2
            let (succeeded, quarterDone, quarter) = (Protected<Int>(), self.quarterDone, count / 4)
            parts = (0..<count).map { index in
                let operation = BlockOperation {
                    context.work(0.1)
                    _ = (index * 1_000..<(index + 1) * 1_000).reduce(0, +)
                }
                operation.name = "part \(index)"
                // Counted once finished, when how it ended can no longer change: a part
                // cancelled after its sum but before its finish ends cancelled, as the
                // timeline draws it, and is not done.
                operation.completionBlock = { [unowned operation] in
                    if operation.outcome?.isSucceeded == true, succeeded.increment() == quarter { quarterDone.signal() }
                }
                return operation
            }
        }

        func start() { queue.addOperations(parts, waitUntilFinished: false) }
        func cancel() { queue.cancelAllOperations() }
        func wait() { queue.waitUntilAllOperationsAreFinished() }

        /// How many parts ended `succeeded` and how many `cancelled` (all have finished).
        var outcomes: (done: Int, cancelled: Int) {
            (parts.filter { $0.outcome?.isSucceeded == true }.count, parts.filter { $0.outcome?.isCancelled == true }.count)
        }
    }

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let server = try context.blockingImageServer()
        let recorder = OperationRecorder(title: "Groups: a sum group and four image providers, cancelled part-way")
        var notes: [String] = []

        let group = SumGroup(parts: 40, context: context)
        recorder.record(group.queue)
        group.start()
        group.quarterDone.wait()
        group.cancel()
        group.wait()
        let (done, cancelled) = group.outcomes
        result.numbers["sum parts done"] = Double(done)
        result.numbers["sum parts cancelled"] = Double(cancelled)
        notes.append("sum group of 40 parts (two at a time, 0.1 unit each), cancelled once 10 were done: \(done) parts done, \(cancelled) cancelled (those that were running when it was cancelled, and those that had not started)")

        let providers = (0..<4).map {
            ImageProvider(index: $0 + 1, server: server, folder: context.output, prefix: "7-provider", recorder: recorder)
        }
        // Image 1 is the slow one: the server keeps it back until the providers have been
        // cancelled, so it is still in flight when they are, however loaded the machine.
        let slow = server.hold(image: ImageServer.slowImage)
        defer { slow.release() }
        for provider in providers { provider.start() }
        for provider in providers where provider.index != ImageServer.slowImage { provider.wait() }
        for provider in providers where !provider.isFinished { provider.cancel() }
        slow.release()
        for provider in providers { provider.wait() }
        let delivered = providers.filter(\.delivered).map { "\($0.index)" }
        result.lists["delivered"] = delivered
        notes.append("four image providers (download → sepia → vignette → write, each on its own queue), cancelled once the fast three arrived: images \(delivered.joined(separator: ", ")) arrived")
        for note in notes { context.console.say("   " + note) }
        try context.writeRecording(recorder, chapter: "7-groups", notes: notes, into: &result)
        return result
    }
}
