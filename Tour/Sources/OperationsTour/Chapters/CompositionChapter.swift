import Operations
import OperationsComposition
import OperationsRecording

/// 10. Composition: the groups chapter's hand-made composites rebuilt as `GroupOperation`s,
/// a download retried with backoff, a "sign in" condition, a "database" category with
/// readers and writers, and a scrolling list that re-uses in-flight work by key.
public struct CompositionChapter: Chapter {
    public static let name = "composition"
    public static let title = "composition: groups, retry, conditions, exclusivity, keys"
    public init() {}

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let server = try context.blockingImageServer()
        let recorder = OperationRecorder(title: "Composition: groups, a retried download, a sign-in condition, a database category, a list by key")
        let queue = OperationQueue()
        queue.name = "composition"
        recorder.record(queue)
        var notes: [String] = []
        notes.append(try sumGroup(in: context, queue: queue, recorder: recorder, result: &result))
        notes.append(imageGroups(in: context, server: server, queue: queue, recorder: recorder, result: &result))
        notes.append(try retriedDownload(in: context, server: server, queue: queue, recorder: recorder, result: &result))
        notes.append(contentsOf: signIn(in: context, queue: queue, result: &result))
        notes.append(database(in: context, recorder: recorder, result: &result))
        notes.append(listByKey(in: context, server: server, recorder: recorder, result: &result))
        for note in notes { context.console.say("   " + note) }
        try context.writeRecording(recorder, chapter: "10-composition", notes: notes, into: &result)
        return result
    }

    /// A `GroupAdd` as the samples write it: many small sums as the typed children of one group, two at a
    /// time; the group delivers their values.
    func sumGroup(
        in context: TourContext, queue: OperationQueue, recorder: OperationRecorder, result: inout ChapterResult
    ) throws -> String {
        let count = 40
        let parts = (0..<count).map { index in
            let part = ValueBlockOperation<Int> {
                context.work(0.05)
                return (index * 1_000..<(index + 1) * 1_000).reduce(0, +)
            }
            part.name = "sum part \(index)"
            return part
        }
        let group = ValueGroupOperation(parts)
        group.name = "GroupAdd"
        group.maxConcurrentChildCount = 2
        recorder.record(group)
        queue.addOperation(group)
        let values = try blockingAwait { try await group.values }
        let total = values.reduce(0, +)
        result.numbers["sum"] = Double(total)
        result.numbers["sum parts"] = Double(values.count)
        return "GroupAdd as a ValueGroupOperation: \(values.count) parts, two at a time, summed to \(total) (0 + 1 + … + \(count * 1_000 - 1))"
    }

    /// The samples' `ImageProvider` as a group: download → sepia → vignette → write as its
    /// children. The slow image's group is cancelled with a reason once the others arrived.
    func imageGroups(
        in context: TourContext, server: ImageServer, queue: OperationQueue, recorder: OperationRecorder,
        result: inout ChapterResult
    ) -> String {
        let groups = (0..<4).map { index in
            ImageGroup(index: index, url: server.url(ofImage: index), folder: context.output, prefix: "10-group")
        }
        for group in groups { recorder.record(group) }
        // The server keeps the slow image back until its group has been cancelled.
        let slow = server.hold(image: ImageServer.slowImage)
        defer { slow.release() }
        queue.addOperations(groups, waitUntilFinished: false)
        for group in groups where group.index != ImageServer.slowImage { group.waitUntilFinished() }
        groups[ImageServer.slowImage].cancel(with: ScrolledAway())
        slow.release()
        for group in groups { group.waitUntilFinished() }
        let delivered = groups.filter(\.delivered).map { "\($0.index)" }
        let slowGroup = groups[ImageServer.slowImage]
        let sameReason = slowGroup.children.allSatisfy { child in
            if case .cancelled(let reason?) = child.outcome { reason is ScrolledAway } else { false }
        }
        result.lists["group images delivered"] = delivered
        result.numbers["slow group cancelled with its reason"] = slowGroup.outcome?.error is ScrolledAway ? 1 : 0
        result.numbers["slow group children cancelled with the same reason"] = sameReason ? 1 : 0
        return "ImageProvider as a GroupOperation (download → sepia → vignette → write as children): images \(delivered.joined(separator: ", ")) arrived; the slow one's group was cancelled with a reason, and its \(slowGroup.children.count) children \(sameReason ? "with the same reason" : "NOT all with the same reason")"
    }
}

/// Why the tour cancels some work: its row left the screen.
struct ScrolledAway: Error, CustomStringConvertible {
    var description: String { "the row scrolled away" }
}

/// The tutorials' image provider as a group: its stages are its children.
/// - Note: `@unchecked Sendable` (as `GroupOperation`): the stages are constants.
final class ImageGroup: GroupOperation, @unchecked Sendable {
    let index: Int
    let download: DownloadOperation
    let output: OutputOperation

    init(index: Int, url: URL, folder: OutputFolder, prefix: String) {
        self.index = index
        let label = String(prefix.drop { $0.isNumber || $0 == "-" })
        download = DownloadOperation(url: url, name: "\(label) \(index): download")
        let sepia = FilterOperation(name: "\(label) \(index): sepia") { Filters.sepia($0) }
        let vignette = FilterOperation(name: "\(label) \(index): vignette") { Filters.vignette($0) }
        output = OutputOperation(folder: folder, fileName: "\(prefix)-\(index).png")
        output.name = "\(label) \(index): write"
        sepia.addDependency(download)
        vignette.addDependency(sepia)
        output.addDependency(vignette)
        super.init(operations: [download, sepia, vignette, output])
        name = "\(label) \(index)"
    }

    var delivered: Bool { output.written != nil }
}
