// The image pipeline as durable operations: each step's output is a file, its path stored
// in the database, so that a step that already ran is never run again after a crash.

import Foundation
import OperationsDurable
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads a PNG over HTTP into `file`; its output is the file's path.
public struct DurableDownload: DurableOperation {
    public static let kind = "tour.download"
    public struct Input: Codable, Sendable {
        public var url: String
        public var file: String
    }
    public init() {}
    public func run(_ input: Input, context: DurableContext) async throws -> String {
        guard let url = URL(string: input.url) else { throw TourError.badResponse(url: input.url, reason: "not a URL") }
        let (data, response) = try await fetch(url)
        if let http = response as? HTTPURLResponse, http.statusCode != 200 {
            throw TourError.badResponse(url: input.url, reason: "HTTP \(http.statusCode)")
        }
        _ = try RGBAImage(png: data)
        try data.write(to: URL(fileURLWithPath: input.file), options: .atomic)
        return input.file
    }
}

/// Sepia on the downloaded image.
public struct DurableSepia: DurableOperation {
    public static let kind = "tour.sepia"
    public struct Input: Codable, Sendable {
        public var source: DurableHandle<DurableDownload>
        public var file: String
    }
    public init() {}
    public func run(_ input: Input, context: DurableContext) async throws -> String {
        try filterFile(try await context.output(of: input.source), into: input.file, Filters.sepia)
    }
}

/// A vignette on the sepia image.
public struct DurableVignette: DurableOperation {
    public static let kind = "tour.vignette"
    public struct Input: Codable, Sendable {
        public var source: DurableHandle<DurableSepia>
        public var file: String
    }
    public init() {}
    public func run(_ input: Input, context: DurableContext) async throws -> String {
        try filterFile(try await context.output(of: input.source), into: input.file, Filters.vignette)
    }
}

/// Writes the finished image into the tour's output folder.
public struct DurableWritePNG: DurableOperation {
    public static let kind = "tour.write"
    public struct Input: Codable, Sendable {
        public var source: DurableHandle<DurableVignette>
        public var file: String
    }
    public init() {}
    public func run(_ input: Input, context: DurableContext) async throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: try await context.output(of: input.source)))
        try data.write(to: URL(fileURLWithPath: input.file), options: .atomic)
        return input.file
    }
}

/// Reads a PNG, filters it, writes the result atomically; returns the result's path.
func filterFile(_ source: String, into destination: String, _ filter: (RGBAImage) -> RGBAImage) throws -> String {
    let image = try RGBAImage(png: try Data(contentsOf: URL(fileURLWithPath: source)))
    try filter(image).png().write(to: URL(fileURLWithPath: destination), options: .atomic)
    return destination
}

/// Every kind of the durable pipeline, for a worker.
public let durablePipelineKinds: [any DurableOperation] = [DurableDownload(), DurableSepia(), DurableVignette(), DurableWritePNG()]

/// The worker's timings in the tour: a short lease, so that a killed worker's step is
/// rescued within about two seconds.
public func durableTourWorkerConfiguration(name: String) -> DurableWorker.Configuration {
    var configuration = DurableWorker.Configuration()
    configuration.name = name
    configuration.lease = .seconds(2)
    configuration.heartbeatInterval = .milliseconds(250)
    configuration.shutdownDeadline = .seconds(2)
    return configuration
}

/// The hidden `durable-worker` subcommand: runs the pipeline's steps from `location` until
/// the process is killed or told to stop (SIGTERM).
public func runDurableWorker(store location: DurableStoreLocation, name: String) async throws {
    let (store, close) = try location.open()
    do {
        try await store.migrate()
    } catch {
        await close()
        throw error
    }
    let worker = DurableWorker(
        store: store, queues: [DurableChapter.queueName], kinds: durablePipelineKinds, concurrency: 2,
        configuration: durableTourWorkerConfiguration(name: name))
    FileHandle.standardOutput.write(Data("worker \(worker.id) started on \(location)\n".utf8))
    let signals = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
    signal(SIGTERM, SIG_IGN)
    signals.setEventHandler { worker.stop() }
    signals.resume()
    defer { signals.cancel() }
    do {
        try await worker.run()
    } catch {
        await close()
        throw error
    }
    await close()
}
