import Operations
import OperationsRecording

/// Not part of the tour's run: the same kind of timeline at 10 and at 10,000 operations,
/// to see that both stay readable (`operations-demo scale`; `--quick`: 10 and 1,000).
public struct ScaleChapter: Chapter {
    public static let name = "scale"
    public static let title = "scale: one timeline at 10 and at 10,000 operations"

    public init() {}

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let large = context.settings.imageCount < 8 ? 1_000 : 10_000
        for count in [large, 10] {
            let recorder = OperationRecorder(title: "\(count) operations: rows of fetch → decode → resize → store, limit 8, every fifth row cancelled")
            let queue = OperationQueue()
            queue.name = "rows"
            queue.maxConcurrentOperationCount = 8
            recorder.record(queue)
            var operations: [Operation] = []
            var cancelled: [Operation] = []
            for row in 0..<(count + 3) / 4 {
                var previous: Operation?
                for (stage, microseconds) in [("fetch", 300), ("decode", 200), ("resize", 150), ("store", 50)] where operations.count < count {
                    // Longer for the small scene, so that its bars are wide enough to read.
                    let sleep = UInt32(microseconds * (1 + row % 3) * (count <= 10 ? 40 : 1))
                    let operation = BlockOperation { usleep(sleep) }
                    operation.name = "row \(row): \(stage)"
                    if let previous { operation.addDependency(previous) }
                    previous = operation
                    operations.append(operation)
                    if row % 5 == 4 || (count <= 10 && row == 2) { cancelled.append(operation) }
                }
            }
            queue.addOperations(operations, waitUntilFinished: false)
            for operation in cancelled { operation.cancel() }
            queue.waitUntilAllOperationsAreFinished()
            let recording = recorder.stop()
            let page = try context.output.write(Data(recording.html().utf8), to: "scale-\(count).html")
            let trace = try context.output.write(Data(recording.chromeTraceJSON().utf8), to: "scale-\(count).trace.json")
            result.files += [page, trace]
            result.numbers["operations \(count)"] = Double(recording.operations.count)
            context.console.say("   \(recording.summary)")
            if count == large { result.recording = recording }
        }
        return result
    }
}
