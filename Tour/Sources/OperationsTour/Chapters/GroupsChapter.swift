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
        let done = Protected<Int>()
        /// Signalled when `quarter` parts are done.
        let quarterDone = DispatchSemaphore(value: 0)

        init(parts count: Int, context: TourContext) {
            queue.name = "sum group"
            queue.maxConcurrentOperationCount = 2
            let (done, quarterDone, quarter) = (self.done, self.quarterDone, count / 4)
            parts = (0..<count).map { index in
                let operation = BlockOperation {
                    context.work(0.1)
                    _ = (index * 1_000..<(index + 1) * 1_000).reduce(0, +)
                    if done.increment() == quarter { quarterDone.signal() }
                }
                operation.name = "part \(index)"
                return operation
            }
        }

        func start() { queue.addOperations(parts, waitUntilFinished: false) }
        func cancel() { queue.cancelAllOperations() }
        func wait() { queue.waitUntilAllOperationsAreFinished() }
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
        result.numbers["sum parts done"] = Double(group.done.current)
        notes.append("sum group of 40 parts (two at a time, 0.1 unit each), cancelled once 10 were done: \(group.done.current) parts done")

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
