import ArgumentParser
import Foundation
import OperationsTour

/// Options every chapter takes.
struct TourOptions: ParsableArguments {
    @Option(help: "Folder for images, HTML timelines and trace files.")
    var output = "operations-demo-output"

    @Option(help: "Port of the image server on 127.0.0.1 (0: any free port).")
    var port = 0

    @Option(help: "Seconds one unit of work takes (the tutorials' sleep).")
    var unit: Double?

    @Flag(help: "Short sleeps and few images.")
    var quick = false

    @Option(help: "The durable chapter's PostgreSQL database (postgres://user:password@host:port/database) instead of a SQLite file (or set \(DurableStoreLocation.postgresURLVariable), to keep a password off the command line); needs a tour built with `--traits PostgreSQL`.")
    var postgres: String?

    func settings() throws -> TourSettings {
        var settings = quick ? TourSettings.quick : TourSettings()
        settings.outputPath = output
        settings.port = port
        if let postgres = postgres ?? ProcessInfo.processInfo.environment[DurableStoreLocation.postgresURLVariable] {
            guard DurableStoreLocation.postgresIsBuiltIn else { throw ValidationError(DurableStoreLocation.postgresBuildHint) }
            settings.durablePostgresURL = postgres
        }
        if let unit {
            guard unit > 0, unit <= 10 else { throw ValidationError("--unit must be between 0 and 10 seconds") }
            settings.unit = unit
        }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        return settings
    }
}

/// Runs some chapters and reports where their files are.
func runTour(_ chapters: [any Chapter.Type], options: TourOptions) async throws {
    let context = try TourContext(settings: try options.settings())
    defer { Task { await context.stop() } }
    let start = Date()
    do {
        _ = try await Tour.run(chapters, context: context)
    } catch let error as TourError {
        await context.stop()
        throw ValidationError(error.description)
    }
    await context.stop()
    context.console.say("")
    context.console.say(String(format: "Done in %.1f s. Open the timelines (*.html) in %@; load the *.trace.json files in Perfetto (ui.perfetto.dev).", Date().timeIntervalSince(start), context.output.url.path))
}

@main
struct OperationsDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operations-demo",
        abstract: "The classic OperationQueue tutorial, live, on swift-operations.",
        subcommands: [Whole.self] + chapterCommands,
        defaultSubcommand: Whole.self)

    struct Whole: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "tour", abstract: "Every chapter, in order (the default).")
        @OptionGroup var options: TourOptions
        func run() async throws { try await runTour(Tour.chapters, options: options) }
    }
}

/// One subcommand per chapter.
protocol ChapterCommand: AsyncParsableCommand {
    associatedtype TheChapter: Chapter
    var options: TourOptions { get }
}

extension ChapterCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: TheChapter.name, abstract: TheChapter.title)
    }
    func run() async throws { try await runTour([TheChapter.self], options: options) }
}

struct PrinterCommand: ChapterCommand { typealias TheChapter = PrinterChapter; @OptionGroup var options: TourOptions }
struct BlocksCommand: ChapterCommand { typealias TheChapter = BlocksChapter; @OptionGroup var options: TourOptions }
struct FilterCommand: ChapterCommand { typealias TheChapter = FilterChapter; @OptionGroup var options: TourOptions }
struct AsyncCommand: ChapterCommand { typealias TheChapter = AsyncChapter; @OptionGroup var options: TourOptions }
struct ChainCommand: ChapterCommand { typealias TheChapter = ChainChapter; @OptionGroup var options: TourOptions }
struct CancelCommand: ChapterCommand { typealias TheChapter = CancelChapter; @OptionGroup var options: TourOptions }
struct GroupsCommand: ChapterCommand { typealias TheChapter = GroupsChapter; @OptionGroup var options: TourOptions }
struct ListCommand: ChapterCommand { typealias TheChapter = ListChapter; @OptionGroup var options: TourOptions }
struct QueueControlCommand: ChapterCommand { typealias TheChapter = QueueControlChapter; @OptionGroup var options: TourOptions }
struct CompositionCommand: ChapterCommand { typealias TheChapter = CompositionChapter; @OptionGroup var options: TourOptions }
struct ScaleCommand: ChapterCommand { typealias TheChapter = ScaleChapter; @OptionGroup var options: TourOptions }
struct DurableCommand: ChapterCommand { typealias TheChapter = DurableChapter; @OptionGroup var options: TourOptions }
struct DashboardCommand: ChapterCommand { typealias TheChapter = DashboardChapter; @OptionGroup var options: TourOptions }

/// The durable chapter's worker process (hidden: the chapter starts it).
struct DurableWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "durable-worker", abstract: "Runs the durable chapter's steps from a store.", shouldDisplay: false)
    @Option(help: "The SQLite store's file.") var store: String?
    @Option(help: "The PostgreSQL store's URL.") var postgres: String?
    @Flag(help: "The PostgreSQL store's URL is in the environment variable \(DurableStoreLocation.postgresURLVariable).")
    var postgresFromEnvironment = false
    @Option(help: "A readable name for the worker.") var name = "worker"
    func run() async throws {
        let location: DurableStoreLocation
        let fromEnvironment = postgresFromEnvironment
            ? ProcessInfo.processInfo.environment[DurableStoreLocation.postgresURLVariable] : nil
        if postgresFromEnvironment, fromEnvironment == nil {
            throw ValidationError("--postgres-from-environment: \(DurableStoreLocation.postgresURLVariable) is not set")
        }
        switch (store, postgres ?? fromEnvironment) {
        case (let path?, nil): location = .sqlite(path: path)
        case (nil, let url?): location = .postgres(url: url)
        default: throw ValidationError("name the store with --store PATH, --postgres URL or --postgres-from-environment")
        }
        try await runDurableWorker(store: location, name: name)
    }
}

let chapterCommands: [any ParsableCommand.Type] = [
    PrinterCommand.self, BlocksCommand.self, FilterCommand.self, AsyncCommand.self, ChainCommand.self,
    CancelCommand.self, GroupsCommand.self, ListCommand.self, QueueControlCommand.self, CompositionCommand.self, ScaleCommand.self,
    DurableCommand.self, DashboardCommand.self, DurableWorkerCommand.self,
]
