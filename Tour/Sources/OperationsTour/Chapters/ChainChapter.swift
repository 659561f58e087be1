import Operations
import OperationsRecording

/// 5. load → filter → post-process → output, as separate operations on one queue, the
/// image passed along `dependencies`, fetched over real HTTP.
public struct ChainChapter: Chapter {
    public static let name = "chain"
    public static let title = "chain: download → sepia → vignette → write, over HTTP"
    public init() {}

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let server = try context.blockingImageServer()
        let queue = OperationQueue()
        queue.name = "chain"
        let recorder = OperationRecorder(title: "Chain: \(context.settings.imageCount) images through four dependent operations each")
        recorder.record(queue)
        let finished = Protected<Int>()
        var outputs: [OutputOperation] = []
        let total = context.settings.imageCount
        context.console.progress("images", done: 0, total: total)
        for index in 0..<total {
            let download = DownloadOperation(url: server.url(ofImage: index), name: "image \(index): download")
            let sepia = FilterOperation(name: "image \(index): sepia") { Filters.sepia($0) }
            let vignette = FilterOperation(name: "image \(index): vignette") { Filters.vignette($0) }
            let output = OutputOperation(folder: context.output, fileName: "5-chain-\(index).png")
            output.name = "image \(index): write"
            sepia.addDependency(download)
            vignette.addDependency(sepia)
            output.addDependency(vignette)
            output.completionBlock = { context.console.progress("images", done: finished.increment(), total: total) }
            outputs.append(output)
            queue.addOperations([output, vignette, sepia, download], waitUntilFinished: false)
        }
        queue.waitUntilAllOperationsAreFinished()
        let written = outputs.compactMap(\.written)
        result.numbers["written"] = Double(written.count)
        let line = "\(written.count) of \(total) images downloaded, filtered and written (each chain ran in dependency order although added backwards)"
        context.console.say("   " + line)
        result.files = written
        try context.writeRecording(recorder, chapter: "5-chain", notes: [line], graph: true, into: &result)
        return result
    }
}

