import Operations

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
    /// The chapter's timeline.
    public var bars: [Timeline.Bar] = []

    public init(chapter: String) { self.chapter = chapter }

    /// The most operations of `queue` that ran at the same time, from the timeline.
    public func mostAtOnce(queue: String) -> Int {
        var edges: [(UInt64, Int)] = []
        for bar in bars where bar.queue == queue {
            guard let start = bar.start, let end = bar.end else { continue }
            edges.append((start, 1))
            edges.append((end, -1))
        }
        var now = 0, most = 0
        for (_, delta) in edges.sorted(by: { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }) {
            now += delta
            most = max(most, now)
        }
        return most
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

    /// Writes the chapter's timeline as HTML and trace JSON, and adds their URLs and the
    /// timeline's bars to `result`.
    public func writeTimeline(_ timeline: Timeline, chapter: String, notes: [String], into result: inout ChapterResult) throws {
        let (bars, identities, origin) = timeline.finish()
        let html = TimelineRenderer.html(timeline, bars: bars, identities: identities, origin: origin, notes: notes)
        let page = try output.write(Data(html.utf8), to: "\(chapter).html")
        let trace = try output.write(try TimelineRenderer.traceJSON(timeline, bars: bars, origin: origin), to: "\(chapter).trace.json")
        result.files += [page, trace]
        result.bars = bars
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
        CancelChapter.self, GroupsChapter.self, ListChapter.self, QueueControlChapter.self,
    ]

    public static func chapter(named name: String) -> (any Chapter.Type)? {
        chapters.first { $0.name == name }
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
        return results
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
