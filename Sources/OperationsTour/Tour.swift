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

    public init(chapter: String) { self.chapter = chapter }
}

/// One experiment of the tour.
public protocol Chapter: Sendable {
    static var name: String { get }
    static var title: String { get }
    init()
    func run(in context: TourContext) async throws -> ChapterResult
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

    public func stop() async {
        await server.stop()
    }

    /// Sleeps `units` units of work (blocking: the tutorials' `sleep`).
    public func work(_ units: Double = 1) {
        Thread.sleep(forTimeInterval: settings.unit * units)
    }

    /// Writes the chapter's timeline as HTML and trace JSON; returns their URLs.
    public func writeTimeline(_ timeline: Timeline, chapter: String, notes: [String]) throws -> [URL] {
        let (bars, identities, origin) = timeline.finish()
        let html = TimelineRenderer.html(timeline, bars: bars, identities: identities, origin: origin, notes: notes)
        let page = try output.write(Data(html.utf8), to: "\(chapter).html")
        let trace = try output.write(try TimelineRenderer.traceJSON(timeline, bars: bars, origin: origin), to: "\(chapter).trace.json")
        return [page, trace]
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
            let result = try await chapter.init().run(in: context)
            for file in result.files {
                context.console.say("   wrote \(file.path)")
            }
            context.console.say(String(format: "   (%.1f s)", Date().timeIntervalSince(started)))
            results.append(result)
        }
        return results
    }
}

/// Seconds since `start`, to two decimals, for printing.
func seconds(since start: Date) -> Double {
    (Date().timeIntervalSince(start) * 100).rounded() / 100
}
