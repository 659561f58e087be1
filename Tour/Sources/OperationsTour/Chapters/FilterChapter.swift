import Operations
import OperationsRecording

/// 3. A batch of images filtered concurrently; each result appended to a shared array
/// through a serial queue, in the filter's completion block.
public struct FilterChapter: Chapter {
    public static let name = "filter"
    public static let title = "filter: a batch of images filtered concurrently"
    public init() {}

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let count = context.settings.imageCount
        let inputs = (0..<count).map { RGBAImage.generated(index: $0, size: context.settings.imageSize * 2) }
        let queue = OperationQueue()
        queue.name = "filters"
        let recorder = OperationRecorder(title: "Filter: \(count) images, blur then sepia, concurrently")
        recorder.record(queue)
        let appendQueue = DispatchQueue(label: "results")  // the tutorials' serial queue
        let results = Protected<[(Int, RGBAImage?)]>()
        // One filter alone, for comparison.
        let single = Date()
        _ = Filters.sepia(Filters.blur(inputs[0], radius: 4))
        let oneFilter = Date().timeIntervalSince(single)
        let start = Date()
        for (index, input) in inputs.enumerated() {
            let operation = FilterOperation(name: "image \(index): blur + sepia", input: input) { Filters.sepia(Filters.blur($0, radius: 4)) }
            operation.completionBlock = { [unowned operation] in
                let image = operation.image
                appendQueue.async { results.append((index, image)) }
            }
            queue.addOperation(operation)
        }
        queue.waitUntilAllOperationsAreFinished()
        appendQueue.sync {}
        let elapsed = Date().timeIntervalSince(start)
        var written: [URL] = []
        for (index, image) in results.current.sorted(by: { $0.0 < $1.0 }) {
            if let image { written.append(try context.output.write(try image.png(), to: "3-filtered-\(index).png")) }
        }
        result.numbers["images"] = Double(results.current.count)
        result.numbers["seconds"] = elapsed
        result.numbers["one filter seconds"] = oneFilter
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let line = String(format: "%d images filtered in %.2f s; one filter alone takes %.2f s (%d cores: ≈ %.1f filters' time)", results.current.count, elapsed, oneFilter, cores, elapsed / max(oneFilter, 0.0001))
        context.console.say("   " + line)
        result.files = written
        try context.writeRecording(recorder, chapter: "3-filter", notes: [line], into: &result)
        return result
    }
}

