import Operations
import OperationsRecording

/// How long and how big the tour's experiments are.
public struct TourSettings: Sendable {
    /// One "unit of work" in seconds: what a sleeping operation sleeps.
    public var unit: Double = 0.25
    public var imageCount = 8
    public var imageSize = 192
    public var listRows = 100
    public var viewport = 10
    public var outputPath = "operations-demo-output"
    /// 0: any free port.
    public var port = 0
    /// The dashboard chapter's port on 127.0.0.1 (0: any free port).
    public var dashboardPort = 0
    /// The executable the durable chapter starts as its worker processes (`nil`: this one).
    public var durableWorkerExecutable: String?
    /// The durable chapter's PostgreSQL database (`nil`: a SQLite file in the output folder).
    public var durablePostgresURL: String?

    public init() {}

    /// Short sleeps and few images: for tests.
    public static var quick: TourSettings {
        var settings = TourSettings()
        settings.unit = 0.04
        settings.imageCount = 4
        settings.imageSize = 48
        settings.listRows = 30
        settings.viewport = 5
        return settings
    }
}

/// What a chapter measured, for the tour's output and for tests.
public struct ChapterResult: Sendable {
    public var chapter: String
    public var numbers: [String: Double] = [:]
    public var lists: [String: [String]] = [:]
    public var files: [URL] = []
    /// What the chapter's recorder saw.
    public var recording: Recording?

    public init(chapter: String) { self.chapter = chapter }

    /// The recorded operations.
    public var operations: [Recording.Operation] { recording?.operations ?? [] }

    /// The most operations of `queue` that ran at the same time, from the recording.
    public func mostAtOnce(queue: String) -> Int {
        recording?.queues.filter { $0.name == queue }.map(\.mostConcurrent).max() ?? 0
    }
}

/// One experiment of the tour: synchronous code, as the tutorials write it (it sleeps and
/// waits), so it runs on a thread of its own, never on Swift's cooperative pool, where
/// blocking would starve the image server.
public protocol Chapter: Sendable {
    static var name: String { get }
    static var title: String { get }
    init()
    func run(in context: TourContext) throws -> ChapterResult
}

/// Everything a chapter needs: settings, output, console, and the image server.
public final class TourContext: Sendable {
    public let settings: TourSettings
    public let output: OutputFolder
    public let console: Console
    private let server = ServerHolder()

    public init(settings: TourSettings, console: Console = Console()) throws {
        self.settings = settings
        self.output = try OutputFolder(path: settings.outputPath)
        self.console = console
    }

    /// The image server, started on first use.
    public func imageServer() async throws -> ImageServer {
        try await server.get(settings: settings)
    }

    /// The image server, for a chapter's (blocking) thread.
    public func blockingImageServer() throws -> ImageServer {
        let done = DispatchSemaphore(value: 0)
        let outcome = Protected<Result<ImageServer, any Error>?>(nil)
        let settings = self.settings
        Task { [server] in
            let result = await Result { try await server.get(settings: settings) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.current!.get()
    }

    public func stop() async {
        await server.stop()
    }

    /// Sleeps `units` units of work (blocking: the tutorials' `sleep`).
    public func work(_ units: Double = 1) {
        Thread.sleep(forTimeInterval: settings.unit * units)
    }

    /// Stops the chapter's recorder and writes its timeline page and Perfetto trace (and,
    /// with `graph`, its dependency graph as DOT and Mermaid), adding their URLs and the
    /// recording to `result`.
    public func writeRecording(
        _ recorder: OperationRecorder, chapter: String, notes: [String], graph: Bool = false, into result: inout ChapterResult
    ) throws {
        let recording = recorder.stop()
        var notes = notes
        let dependencies = graph ? recording.graph : nil
        if let dependencies {
            notes.append("Dependency graph: \(chapter).dot (Graphviz: dot -Tsvg \(chapter).dot) and \(chapter).mmd (Mermaid); \(dependencies.nodes.count) operations, \(dependencies.edges.count) dependencies, \(dependencies.cycles.count) cycles.")
        }
        let page = try output.write(Data(recording.html(notes: notes).utf8), to: "\(chapter).html")
        let trace = try output.write(Data(recording.chromeTraceJSON().utf8), to: "\(chapter).trace.json")
        result.files += [page, trace]
        if let dependencies {
            let dot = try output.write(Data(dependencies.dot().utf8), to: "\(chapter).dot")
            let mermaid = try output.write(Data(dependencies.mermaid().utf8), to: "\(chapter).mmd")
            result.files += [dot, mermaid]
        }
        result.recording = recording
    }
}


extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// Starts the image server once.
actor ServerHolder {
    private var server: ImageServer?

    func get(settings: TourSettings) async throws -> ImageServer {
        if let server { return server }
        let started = try await ImageServer.start(settings: settings)
        server = started
        return started
    }

    func stop() async {
        await server?.stop()
        server = nil
    }
}

/// The chapters, in tour order.
public enum Tour {
    public static let chapters: [any Chapter.Type] = [
        PrinterChapter.self, BlocksChapter.self, FilterChapter.self, AsyncChapter.self, ChainChapter.self,
        CancelChapter.self, GroupsChapter.self, ListChapter.self, QueueControlChapter.self, CompositionChapter.self,
        DurableChapter.self, DashboardChapter.self,
    ]

    /// Chapters that the tour's run leaves out, each run by its subcommand
    /// (`operations-demo scale`).
    public static let chaptersOutsideTheRun: [any Chapter.Type] = [ScaleChapter.self]

    public static func chapter(named name: String) -> (any Chapter.Type)? {
        (chapters + chaptersOutsideTheRun).first { $0.name == name }
    }

    /// Runs chapters in order, printing what each showed and where its files are.
    public static func run(_ chapters: [any Chapter.Type], context: TourContext) async throws -> [ChapterResult] {
        var results: [ChapterResult] = []
        for (index, chapter) in chapters.enumerated() {
            context.console.say("")
            context.console.say("== \(index + 1). \(chapter.title)")
            let started = Date()
            let result = try await runOnOwnThread(chapter, context: context)
            for file in result.files {
                context.console.say("   wrote \(file.path)")
            }
            context.console.say(String(format: "   (%.1f s)", Date().timeIntervalSince(started)))
            results.append(result)
        }
        let index = try context.output.write(Data(indexPage(results).utf8), to: "index.html")
        context.console.say("")
        context.console.say("   wrote \(index.path)")
        return results
    }

    /// The page that links the chapters' pages, traces and graphs.
    static func indexPage(_ results: [ChapterResult]) -> String {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        var rows = ""
        for result in results {
            let title = chapter(named: result.chapter)?.title ?? result.chapter
            let links = result.files.filter { !$0.lastPathComponent.hasSuffix(".png") }.map { file in
                "<a href=\"\(escape(file.lastPathComponent))\">\(escape(file.lastPathComponent))</a>"
            }.joined(separator: " · ")
            let summary = result.recording?.summary ?? ""
            rows += "<tr><td><b>\(escape(result.chapter))</b><br>\(escape(title))</td><td>\(links)<br><small>\(escape(summary))</small></td></tr>\n"
        }
        // Every chapter has a row: those this run left out say how to run them.
        let ran = Set(results.map(\.chapter))
        for chapter in chapters + chaptersOutsideTheRun where !ran.contains(chapter.name) {
            let note = chapters.contains { $0.name == chapter.name } ? "not in this run" : "not in the tour's run"
            rows += "<tr><td><b>\(escape(chapter.name))</b><br>\(escape(chapter.title))</td><td><small>\(note): <code>swift run --package-path Tour operations-demo \(escape(chapter.name))</code></small></td></tr>\n"
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>Operations tour</title>
            <style>body{font-family:system-ui,sans-serif;margin:20px;color:#222}td{padding:6px 10px;vertical-align:top;border-bottom:1px solid #ddd}small{color:#555}</style></head>
            <body><h1>The OperationQueue tour</h1>
            <p>Each chapter's page is a timeline of its queues (open it in a browser); each trace opens in Perfetto (ui.perfetto.dev); .dot and .mmd files are dependency graphs.</p>
            <table>
            \(rows)</table></body></html>

            """
    }
}

/// Runs a chapter on a thread of its own and waits for it without blocking the caller.
public func runOnOwnThread(_ chapter: any Chapter.Type, context: TourContext) async throws -> ChapterResult {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try chapter.init().run(in: context) })
        }
        thread.name = "tour: \(chapter.name)"
        thread.start()
    }
}

/// Seconds since `start`, to two decimals, for printing.
func seconds(since start: Date) -> Double {
    (Date().timeIntervalSince(start) * 100).rounded() / 100
}
