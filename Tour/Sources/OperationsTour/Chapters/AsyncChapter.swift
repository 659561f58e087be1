import Operations
import OperationsRecording

/// 4. The classic asynchronous operation: a slow asynchronous addition, and a download
/// wrapped as an operation that cancels its request when cancelled; then the modern form,
/// async bodies bounded by a queue (`AsyncChapter+Tasks.swift`).
public struct AsyncChapter: Chapter {
    public static let name = "async"
    public static let title = "async: asynchronous operations, and cancelling a download"
    public init() {}

    /// Adds two numbers "remotely": the answer arrives later, on another thread.
    final class SlowSum: Operation, @unchecked Sendable {
        // `@unchecked Sendable`: state is behind `lock`.
        enum State: String { case ready, executing, finished
            var key: String { "is" + rawValue.capitalized }
        }
        let lhs: Int, rhs: Int, delay: Double
        private let lock = NSLock()
        private var _state = State.ready
        private var _sum: Int?

        init(_ lhs: Int, _ rhs: Int, delay: Double) {
            self.lhs = lhs
            self.rhs = rhs
            self.delay = delay
            super.init()
            name = "\(lhs) + \(rhs), asynchronously"
        }

        var sum: Int? { lock.withLock { _sum } }
        var state: State {
            get { lock.withLock { _state } }
            set {
                let old = state
                willChangeValue(forKey: old.key)
                willChangeValue(forKey: newValue.key)
                lock.withLock { _state = newValue }
                didChangeValue(forKey: old.key)
                didChangeValue(forKey: newValue.key)
            }
        }
        override var isReady: Bool { super.isReady && state == .ready }
        override var isExecuting: Bool { state == .executing }
        override var isFinished: Bool { state == .finished }
        override var isAsynchronous: Bool { true }

        override func start() {
            if isCancelled { state = .finished; return }
            state = .executing
            let (lhs, rhs) = (self.lhs, self.rhs)
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
                lock.withLock { _sum = lhs + rhs }
                state = .finished
            }
        }
    }

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let server = try context.blockingImageServer()
        let queue = OperationQueue()
        queue.name = "async"
        let recorder = OperationRecorder(title: "Async: slow additions and a cancelled download")
        recorder.record(queue)
        var notes: [String] = []

        let sums = [(2, 3), (40, 2), (100, 23)].map { SlowSum($0.0, $0.1, delay: context.settings.unit) }
        let start = Date()
        queue.addOperations(sums, waitUntilFinished: true)
        let line1 = String(format: "three asynchronous additions, one unit each, together took %.2f s: %@", seconds(since: start), sums.map { "\($0.lhs)+\($0.rhs)=\($0.sum.map(String.init) ?? "?")" }.joined(separator: ", "))
        notes.append(line1)
        result.lists["sums"] = sums.map { "\($0.sum ?? -1)" }

        // The slow image: the server keeps it back until it has been cancelled, so the
        // cancel always lands mid-request, however loaded the machine.
        let held = server.hold(image: ImageServer.slowImage)
        defer { held.release() }
        let slow = DownloadOperation(url: server.url(ofImage: ImageServer.slowImage), name: "download the slow image")
        let fast = DownloadOperation(url: server.url(ofImage: 0), name: "download image 0")
        queue.addOperations([slow, fast], waitUntilFinished: false)
        fast.waitUntilFinished()
        slow.cancel()
        held.release()
        queue.waitUntilAllOperationsAreFinished()
        let cancelledError = (slow.error as? URLError)?.code == .cancelled
        result.numbers["slow cancelled request"] = cancelledError ? 1 : 0
        result.numbers["fast bytes"] = Double(fast.bytesReceived)
        let line2 = "image 0 arrived (\(fast.bytesReceived) bytes, \(fast.image.map { "\($0.width)×\($0.height)" } ?? "no image")); the slow one was cancelled after it and its request ended with \(slow.error.map { "\($0)" } ?? "no error")"
        notes.append(line2)
        notes += try runWithTasks(in: context, server: server, recorder: recorder, result: &result)
        for note in notes { context.console.say("   " + note) }
        try context.writeRecording(recorder, chapter: "4-async", notes: notes, into: &result)
        return result
    }
}
