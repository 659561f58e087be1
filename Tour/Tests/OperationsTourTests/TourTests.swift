import Foundation
import OperationsTour
import Testing
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Runs one chapter on the quick settings in a fresh folder. With `durableWorkers`, the
/// durable chapter's worker processes are `operations-demo`, built beside the tests (the test
/// runner is not the tour's executable).
func runChapter<C: Chapter>(
    _ chapter: C.Type, unit: Double? = nil, durableWorkers: Bool = false
) async throws -> (ChapterResult, TourContext) {
    var settings = TourSettings.quick
    if let unit { settings.unit = unit }
    settings.outputPath = NSTemporaryDirectory() + "operations-tour-tests/\(C.name)-\(UUID().uuidString)"
    if durableWorkers {
        settings.durableWorkerExecutable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("operations-demo").path
    }
    let context = try TourContext(settings: settings, console: Console.silent())
    let result = try await runOnOwnThread(chapter, context: context)
    await context.stop()
    return (result, context)
}

/// The chapter's files of one extension.
func files(_ result: ChapterResult, ending suffix: String) -> [URL] {
    result.files.filter { $0.lastPathComponent.hasSuffix(suffix) }
}

/// Checks the HTML page and the trace of a chapter: the SVG parses as XML and has one row
/// per recorded operation (or groups that count them all), with a bar per operation that
/// ran and a ✕ per operation cancelled before it started; the trace is JSON with one
/// complete event per operation that ran.
func checkTimelineFiles(_ result: ChapterResult, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let page = try #require(files(result, ending: ".html").first, sourceLocation: sourceLocation)
    let html = try String(contentsOf: page, encoding: .utf8)
    let svgStart = try #require(html.range(of: "<svg"), sourceLocation: sourceLocation)
    let svgEnd = try #require(html.range(of: "</svg>"), sourceLocation: sourceLocation)
    let svg = String(html[svgStart.lowerBound..<svgEnd.upperBound])
    let counter = BarCounter()
    let parser = XMLParser(data: Data(svg.utf8))
    parser.delegate = counter
    #expect(parser.parse(), "the SVG is well-formed XML", sourceLocation: sourceLocation)
    let operations = result.operations
    let ran = operations.filter { $0.runningTime != nil }.count
    #expect(ran > 0, sourceLocation: sourceLocation)
    if counter.groupedOperations > 0 {
        #expect(counter.groupedOperations == operations.count, "groups count every operation", sourceLocation: sourceLocation)
    } else {
        #expect(counter.rows == operations.count, "one row per operation", sourceLocation: sourceLocation)
        #expect(counter.bars == operations.filter { !$0.wasCancelledBeforeStart && $0.started != nil }.count, "one bar per operation that started", sourceLocation: sourceLocation)
        #expect(counter.crosses == operations.filter(\.wasCancelledBeforeStart).count, "a mark per operation cancelled before it started", sourceLocation: sourceLocation)
    }
    let trace = try #require(files(result, ending: ".trace.json").first, sourceLocation: sourceLocation)
    let json = try JSONSerialization.jsonObject(with: Data(contentsOf: trace)) as? [String: Any]
    let events = json?["traceEvents"] as? [[String: Any]] ?? []
    #expect(events.filter { $0["ph"] as? String == "X" }.count == ran, sourceLocation: sourceLocation)
}

final class BarCounter: NSObject, XMLParserDelegate, @unchecked Sendable {
    // `@unchecked Sendable`: used by one parser on one thread.
    var bars = 0, rows = 0, crosses = 0, groupedOperations = 0
    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        switch (elementName, attributes["class"]) {
        case ("rect", "bar"): bars += 1
        case ("g", "operation"): rows += 1
        case ("path", "cancelled-mark"): crosses += 1
        case ("g", "group"): groupedOperations += Int(attributes["data-count"] ?? "") ?? 0
        default: break
        }
    }
}

@Suite("Tour chapters (quick settings)")
struct TourChapterTests {
    @Test("printer: all seven overlap on a default queue; limits 2 and 1 hold; QoS reorders a concurrent queue, not a serial one")
    func printer() async throws {
        // A longer unit: the default queue adds workers while the running ones block, a few
        // milliseconds apiece; seven must all be running before the first finishes.
        let (result, _) = try await runChapter(PrinterChapter.self, unit: 0.15)
        // Sleeping operations overlap beyond the processor count (Linux's Foundation runs
        // about three). That all seven run at once is checked without a clock, by a
        // rendezvous, in QueueTests; within one unit it depends on how fast Dispatch makes
        // threads under load (six under a sanitizer with the stress test running).
        #expect(result.mostAtOnce(queue: "printer default") > ProcessInfo.processInfo.activeProcessorCount)
        #expect(result.mostAtOnce(queue: "printer limit 2") == 2)
        #expect(result.mostAtOnce(queue: "printer limit 1") == 1)
        #expect(result.lists["limit 1 order"] == ["A", "B", "C", "D", "E", "F", "G"])
        #expect(result.lists["userInitiated QoS order"] == ["A", "B", "C", "D", "E", "F", "G"])
        #expect(result.lists["veryHigh priority order"]?.first == "G")
        // A and B may take the two slots before G is added; G, more important, then takes
        // the first free one.
        #expect(result.lists["limit 2, userInitiated QoS order"]?.prefix(3).contains("G") == true)
        #expect(result.lists["background queue, limit 2, userInteractive QoS order"]?.prefix(2).contains("G") == true)
        try checkTimelineFiles(result)
    }

    @Test("blocks: the blocks overlap and the completion block runs last")
    func blocks() async throws {
        // A longer unit, so that all eight blocks' threads exist before the first ends.
        let (result, _) = try await runChapter(BlocksChapter.self, unit: 0.15)
        let order = try #require(result.lists["order"])
        #expect(order.count == 9)
        #expect(order.last == "<completion>")
        // How many of the eight get a thread at once depends on how fast Dispatch's pool
        // grows under load (under a sanitizer with the stress test running, five); the
        // strict check that blocks that wait for each other all run is BlockOperationTests'.
        #expect(try #require(result.numbers["most at once"]) >= 2)
        // The picture shows the blocks: one bar per block under the operation's bar, the
        // blocks that ran at once overlapping.
        let parts = try #require(result.operations.first { $0.name == "sentence" }?.parts)
        #expect(parts.count == 8)
        let overlapping = parts.filter { part in parts.contains { $0.name != part.name && $0.started < part.finished && part.started < $0.finished } }
        #expect(overlapping.count >= 2)
        let page = try String(contentsOf: #require(files(result, ending: ".html").first), encoding: .utf8)
        #expect(page.components(separatedBy: "class=\"part-bar\"").count - 1 == 8)
        try checkTimelineFiles(result)
    }

    @Test("filter: every image is filtered and written as a PNG that decodes")
    func filter() async throws {
        let (result, context) = try await runChapter(FilterChapter.self)
        let pngs = files(result, ending: ".png")
        #expect(pngs.count == context.settings.imageCount)
        for png in pngs {
            let image = try RGBAImage(png: Data(contentsOf: png))
            #expect(image.width == context.settings.imageSize * 2)
        }
        try checkTimelineFiles(result)
    }

    @Test("async: asynchronous additions finish; cancelling the download cancels its request")
    func async() async throws {
        let (result, _) = try await runChapter(AsyncChapter.self)
        #expect(result.lists["sums"] == ["5", "42", "123"])
        #expect(result.numbers["slow cancelled request"] == 1)
        #expect(try #require(result.numbers["fast bytes"]) > 0)
        // The slow download was cancelled while it ran (mid-request).
        let slow = try #require(result.operations.first { $0.name == "download the slow image" })
        #expect(slow.outcome.name == "cancelled" && !slow.wasCancelledBeforeStart)
        // The modern form: every image through download → then(sepia), the limit held while
        // bodies were suspended, and a batch cancelled with the task that awaited it.
        #expect(result.numbers["async images"] == 6)
        let most = try #require(result.numbers["async most in flight"])
        #expect(most >= 1 && most <= 4)
        #expect(result.numbers["async slow cancelled"] == 1)
        #expect(try #require(result.numbers["async cancelled"]) >= 1)
        try checkTimelineFiles(result)
    }

    @Test("chain: every image goes through download → sepia → vignette → write in order")
    func chain() async throws {
        let (result, context) = try await runChapter(ChainChapter.self)
        #expect(result.numbers["written"] == Double(context.settings.imageCount))
        for png in files(result, ending: ".png") { _ = try RGBAImage(png: Data(contentsOf: png)) }
        // Each write started after its download finished.
        for index in 0..<context.settings.imageCount {
            let download = try #require(result.operations.first { $0.name == "image \(index): download" })
            let write = try #require(result.operations.first { $0.name == "image \(index): write" })
            #expect(try #require(download.finished) <= #require(write.started))
        }
        try checkTimelineFiles(result)
        // The graph export: a node per operation, an arrow per dependency (three per image).
        let dot = try String(contentsOf: #require(files(result, ending: ".dot").first), encoding: .utf8)
        #expect(dot.hasPrefix("digraph "))
        #expect(dot.components(separatedBy: " -> ").count - 1 == 3 * context.settings.imageCount)
        #expect(dot.components(separatedBy: "finished · succeeded").count - 1 >= 4 * context.settings.imageCount)
        let mermaid = try String(contentsOf: #require(files(result, ending: ".mmd").first), encoding: .utf8)
        #expect(mermaid.hasPrefix("flowchart LR"))
        #expect(mermaid.components(separatedBy: " --> ").count - 1 == 3 * context.settings.imageCount)
    }

    @Test("cancel: only the sums that check isCancelled stop early")
    func cancel() async throws {
        let (result, _) = try await runChapter(CancelChapter.self)
        #expect(result.numbers["ignores isCancelled"] == 60)
        // Cancelled a third of the way: the sums that check stop there, at chunk 20 of 60.
        #expect(result.numbers["checks isCancelled"] == 20)
        #expect(result.numbers["reports progress"] == 20)
    }

    @Test("groups: cancelling part-way stops the rest; the slow image does not arrive")
    func groups() async throws {
        let (result, _) = try await runChapter(GroupsChapter.self)
        // The text counts what the picture draws: done = succeeded, the rest cancelled.
        let done = try #require(result.numbers["sum parts done"])
        let cancelled = try #require(result.numbers["sum parts cancelled"])
        let sumParts = result.operations.filter { $0.queue == "sum group" }
        #expect(sumParts.count == 40)
        #expect(done == Double(sumParts.filter { $0.outcome.name == "succeeded" }.count))
        #expect(cancelled == Double(sumParts.filter { $0.outcome.name == "cancelled" }.count))
        #expect(done + cancelled == 40)
        #expect(done >= 10 && done < 40, "cancelled once ten parts had succeeded")
        let delivered = try #require(result.lists["delivered"])
        #expect(!delivered.contains("1"), "image 1 takes four units; the providers were cancelled after two")
        #expect(result.operations.contains { $0.outcome.name == "cancelled" })
    }

    @Test("list: rows that leave the viewport are cancelled; every row is accounted for")
    func list() async throws {
        let (result, context) = try await runChapter(ListChapter.self)
        let started = try #require(result.numbers["started"])
        #expect(started == Double(context.settings.listRows))
        #expect(try #require(result.numbers["finished"]) + #require(result.numbers["cancelled"]) == started)
        #expect(try #require(result.numbers["cancelled"]) > 0)
        #expect(try #require(result.numbers["finished"]) > 0)
        try checkTimelineFiles(result)
    }

    @Test("queue control: suspension, barrier, priorities and the main queue")
    func queueControl() async throws {
        let (result, _) = try await runChapter(QueueControlChapter.self)
        #expect(result.numbers["started while suspended"] == 0)
        // Everything added before the barrier ran before it, everything after it after it
        // (among themselves they run concurrently, in no defined order).
        let order = try #require(result.lists["barrier order"])
        let barrier = try #require(order.firstIndex(of: "BARRIER"))
        #expect(Set(order[..<barrier]) == ["before1", "before2", "before3", "before4"])
        #expect(Set(order[(barrier + 1)...]) == ["after1", "after2", "after3", "after4"])
        // The picture names the barrier, and draws it after the four before it.
        let barrierQueue = result.operations.filter { $0.queue == "barrier" }
        let drawn = try #require(barrierQueue.first { $0.name == "barrier" })
        for before in barrierQueue where before.name.hasPrefix("before") {
            #expect(try #require(before.finished) <= #require(drawn.started))
        }
        #expect(!barrierQueue.contains { $0.name.hasPrefix("BlockOperation") })
        #expect(result.lists["priority order"] == ["veryHigh", "high", "normal", "low", "veryLow"])
        #expect(result.lists["main"] == ["true", "true"])
    }

    @Test("composition: GroupAdd and ImageProvider as groups, retry after 503s, sign-in condition, database category, list by key")
    func composition() async throws {
        let (result, _) = try await runChapter(CompositionChapter.self)
        // GroupAdd: 40 typed children summing 0..<40,000.
        #expect(result.numbers["sum parts"] == 40)
        #expect(result.numbers["sum"] == Double((0..<40_000).reduce(0, +)))
        // ImageProvider groups: the three fast images arrive; the held slow one's group is
        // cancelled with its reason, which every child got too.
        #expect(result.lists["group images delivered"] == ["0", "2", "3"])
        #expect(result.numbers["slow group cancelled with its reason"] == 1)
        #expect(result.numbers["slow group children cancelled with the same reason"] == 1)
        // The flaky endpoint answers 503 twice: three attempts.
        #expect(result.numbers["retry attempts"] == 3)
        #expect(result.lists["retry statuses"] == ["503", "503", "200"])
        // Two operations share one sign-in; the wrong password keeps the third from running.
        #expect(result.numbers["sign-ins"] == 1)
        #expect(result.lists["ran with an account"] == ["load messages", "load profile"])
        #expect(result.numbers["refused without an account"] == 1)
        // The page draws what the notes say: the sign-in with the wrong password failed, and
        // the operation that needed it was cancelled before it started.
        let signIns = result.operations.filter { $0.name.hasPrefix("sign in for") }
        #expect(signIns.filter { $0.outcome.name == "failed" }.map(\.name) == ["sign in for post with the wrong password"])
        #expect(signIns.filter { $0.outcome.name == "succeeded" }.count == 2)
        let post = try #require(result.operations.first { $0.name == "post with the wrong password" })
        #expect(post.outcome.name == "cancelled" && post.wasCancelledBeforeStart)
        // Readers share the database (the first two met inside), writers are alone.
        #expect(result.numbers["first readers met"] == 1)
        #expect(try #require(result.numbers["most readers at once"]) >= 2)
        #expect(result.numbers["most writers at once"] == 1)
        #expect(result.numbers["exclusivity violations"] == 0)
        // The held slow row left and came back while in flight: it joined, one request.
        #expect(result.numbers["list slow row joined"] == 1)
        #expect(result.numbers["list slow row requests"] == 1)
        #expect(try #require(result.numbers["list rows delivered"]) >= 1)
        // Every group finished after its children (children first, always).
        let operations = result.operations
        for group in operations where group.queue == "composition" || group.queue == "list by key" {
            let children = operations.filter { $0.queue == "\(group.name) children" }
            guard let finished = group.finished else { continue }
            #expect(children.allSatisfy { ($0.finished ?? .max) <= finished }, "\(group.name) finished before a child")
        }
        #expect(operations.contains { $0.queue == "retried download attempts" })
        try checkTimelineFiles(result)
    }

    @Test("scale (not in the tour's run): the same timeline at 10 and 1,000 operations")
    func scale() async throws {
        let (result, _) = try await runChapter(ScaleChapter.self)
        #expect(result.numbers["operations 10"] == 10)
        #expect(result.numbers["operations 1000"] == 1_000)
        #expect(files(result, ending: ".html").count == 2)
        try checkTimelineFiles(result)
    }

    @Test("the tour's run writes an index page that links every chapter's files")
    func index() async throws {
        var settings = TourSettings.quick
        settings.outputPath = NSTemporaryDirectory() + "operations-tour-tests/index-\(UUID().uuidString)"
        let context = try TourContext(settings: settings, console: Console.silent())
        let results = try await Tour.run([BlocksChapter.self, CancelChapter.self], context: context)
        await context.stop()
        let index = try String(contentsOf: context.output.url.appendingPathComponent("index.html"), encoding: .utf8)
        for file in results.flatMap(\.files) where !file.lastPathComponent.hasSuffix(".png") {
            #expect(index.contains("href=\"\(file.lastPathComponent)\""), "\(file.lastPathComponent)")
        }
        #expect(index.contains("2-blocks.html") && index.contains("6-cancel.trace.json"))
        // Every chapter has a row, those left out of this run with their command.
        for chapter in Tour.chapters + Tour.chaptersOutsideTheRun {
            #expect(index.contains("<b>\(chapter.name)</b>"), "\(chapter.name)")
        }
        #expect(index.contains("operations-demo scale</code>"))
    }

    @Test("the tour's README lists every chapter in its table")
    func readmeListsEveryChapter() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        for chapter in Tour.chapters + Tour.chaptersOutsideTheRun {
            #expect(text.contains("| `\(chapter.name)` |"), "\(chapter.name)")
        }
    }
}
