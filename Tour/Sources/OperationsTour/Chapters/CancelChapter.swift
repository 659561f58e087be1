import Operations
import OperationsRecording

/// 6. Cancellation is cooperative: a long sum that ignores `isCancelled`, one that checks
/// it, and one that reports progress and stops when cancelled.
public struct CancelChapter: Chapter {
    public static let name = "cancel"
    public static let title = "cancel: cancellation only stops code that checks"
    public init() {}

    /// Sums `count` numbers in chunks; each chunk takes a twentieth of a unit.
    final class Sum: Operation, @unchecked Sendable {
        enum Style: String { case ignoresCancellation = "ignores isCancelled", checksCancellation = "checks isCancelled", reportsProgress = "reports progress" }
        let style: Style
        let context: TourContext
        let chunks = 60
        let sumProgress = Progress(totalUnitCount: 60)
        /// Signalled when a third of the chunks are done; the sum then waits for `resume`.
        let thirdDone = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var _processed = 0, _total = 0

        init(_ style: Style, context: TourContext) {
            self.style = style
            self.context = context
            super.init()
            name = style.rawValue
        }

        var processed: Int { lock.withLock { _processed } }

        override func main() {
            for chunk in 0..<chunks {
                if style != .ignoresCancellation && isCancelled { return }
                context.work(0.05)
                let partial = (chunk * 1_000..<(chunk + 1) * 1_000).reduce(0, +)
                lock.withLock {
                    _total += partial
                    _processed += 1
                }
                if style == .reportsProgress { sumProgress.completedUnitCount = Int64(chunk + 1) }
                if chunk + 1 == chunks / 3 {
                    thirdDone.signal()
                    resume.wait()
                }
            }
        }
    }

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let queue = OperationQueue()
        queue.name = "sums"
        let recorder = OperationRecorder(title: "Cancel: three sums cancelled a third of the way")
        recorder.record(queue)
        let sums = [Sum.Style.ignoresCancellation, .checksCancellation, .reportsProgress].map { Sum($0, context: context) }
        queue.addOperations(sums, waitUntilFinished: false)
        // Watch the one that reports progress.
        let watcher = Task {
            while !sums[2].isFinished {
                context.console.progress("progress of the sum that reports it", done: Int(sums[2].sumProgress.completedUnitCount), total: 60)
                try await Task.sleep(nanoseconds: UInt64(context.settings.unit * 0.25 * 1e9))
            }
        }
        // Cancel when each sum is a third done, each held there until the cancel is made:
        // events, not a clock, so that a loaded machine that runs one sum ahead of the others
        // cannot let it finish first.
        for sum in sums { sum.thirdDone.wait() }
        queue.cancelAllOperations()
        for sum in sums { sum.resume.signal() }
        queue.waitUntilAllOperationsAreFinished()
        watcher.cancel()
        var notes: [String] = []
        for sum in sums {
            result.numbers[sum.style.rawValue] = Double(sum.processed)
            let line = "the sum that \(sum.style.rawValue): \(sum.processed) of \(sum.chunks) chunks done when it finished"
            context.console.say("   " + line)
            notes.append(line)
        }
        notes.append("All three were cancelled when the one that reports progress was 20 chunks in (one unit); only code that checks isCancelled stops.")
        try context.writeRecording(recorder, chapter: "6-cancel", notes: notes, into: &result)
        return result
    }
}
