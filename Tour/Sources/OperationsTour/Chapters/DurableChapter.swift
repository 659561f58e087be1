import Foundation
import OperationsDurable
#if canImport(Glibc)
import Glibc
#endif

/// 11. Durable: the image pipeline as durable operations in a SQLite file, run by a worker
/// process that is killed with SIGKILL in the middle; a second worker finishes the work. With
/// `--postgres URL` (a tour built with the `PostgreSQL` trait), the operations live in that
/// database and three worker processes run them; the two that survive the kill finish.
public struct DurableChapter: Chapter {
    public static let name = "durable"
    public static let title = "durable: the image pipeline survives a worker killed with SIGKILL"
    static let queueName = "tour-images"
    public init() {}

    /// One image's four steps.
    struct Pipeline: Sendable {
        let index: Int
        let download: DurableHandle<DurableDownload>
        let sepia: DurableHandle<DurableSepia>
        let vignette: DurableHandle<DurableVignette>
        let write: DurableHandle<DurableWritePNG>

        var steps: [(String, DurableOperationID)] {
            [("download", download.id), ("sepia", sepia.id), ("vignette", vignette.id), ("write", write.id)]
        }
    }

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let server = try context.blockingImageServer()
        let location = Self.storeLocation(in: context)
        if case .sqlite(let path) = location {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("operations-tour-durable-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let executable = context.settings.durableWorkerExecutable ?? WorkerProcess.currentExecutable
        let count = context.settings.imageCount
        // The step that is running when the worker dies: this image's download, held by the
        // server until the worker is gone.
        let victim = min(2, count)

        let (store, close) = try location.open()
        defer { blocking { await close() } }
        let queue = DurableQueue(name: Self.queueName, store: store)
        let pipelines = try blocking {
            try await store.migrate()
            // A database outlives the tour: what an earlier run left unfinished is not run.
            if location.isPostgres { try await queue.cancelAll(reason: "left by an earlier run of the tour") }
            return try await Self.enqueue(count: count, server: server, queue: queue, work: work, output: context.output)
        }
        let hold = server.hold(image: victim)
        defer { hold.release() }

        // The workers not yet stopped (and reaped): killed if the chapter fails.
        var running: [WorkerProcess] = []
        defer { for worker in running { worker.stop(SIGKILL) } }
        let log = work.appendingPathComponent("workers.log").path
        let started = Date()
        let fleet = location.isPostgres ? 3 : 1
        for number in 1...fleet {
            running.append(try WorkerProcess.start(executable: executable, store: location, name: "worker-\(number)", log: log))
        }
        // Synchronised on the database: every other image written, the victim's download running.
        let victimPipeline = pipelines[victim - 1]
        try blocking {
            try await Self.waitFor("the first worker to reach image \(victim)'s download", log: log) {
                guard try await victimPipeline.download.state == .running else { return false }
                for pipeline in pipelines where pipeline.index != victim {
                    guard try await pipeline.write.state == .succeeded else { return false }
                }
                return true
            }
        }
        // The worker running the download (its id is its name and a suffix).
        let runner = try blocking { try await victimPipeline.download.attempts.last?.worker ?? "" }
        let victimIndex = running.firstIndex { runner.hasPrefix($0.name + "-") } ?? 0
        let dead = running.remove(at: victimIndex)
        dead.stop(SIGKILL)
        let killed = Date()
        context.console.say("   \(dead.name) (pid \(dead.pid)) killed with SIGKILL while image \(victim)'s download was running")
        hold.release()
        if running.isEmpty {
            running.append(try WorkerProcess.start(executable: executable, store: location, name: "worker-\(fleet + 1)", log: log))
        }
        let finishers = running.map(\.name).joined(separator: " and ")
        try blocking {
            try await Self.waitFor("\(finishers) to finish image \(victim)", log: log) {
                try await victimPipeline.write.state.isFinished
            }
        }
        for worker in running { worker.stop(SIGTERM) }
        running.removeAll()
        let finished = Date()

        // What the store recorded.
        let records = try blocking {
            var records: [(String, Int, DurableRecord)] = []
            for pipeline in pipelines {
                for (step, id) in pipeline.steps {
                    guard let record = try await store.record(of: id, includingAttempts: true) else { continue }
                    records.append(("image \(pipeline.index): \(step)", pipeline.index, record))
                }
            }
            return records
        }
        let succeeded = records.filter { $0.2.state == .succeeded }.count
        let once = records.filter { $0.2.attempts.count == 1 }.count
        // Steps run more than once: the killed worker's download, and on a machine so loaded
        // that a live worker could not renew a lease in time, that step too (at-least-once).
        let interrupted = records.filter { $0.2.attempts.count > 1 }
        let victimRecord = records.first { $0.2.id == victimPipeline.download.id }?.2
        let lost = victimRecord?.attempts.last.map { $0.start.timeIntervalSince(killed) } ?? 0
        result.numbers["steps"] = Double(records.count)
        result.numbers["steps succeeded"] = Double(succeeded)
        result.numbers["steps run once"] = Double(once)
        result.numbers["attempts"] = Double(records.map(\.2.attempts.count).reduce(0, +))
        result.numbers["attempts of the interrupted step"] = Double(victimRecord?.attempts.count ?? 0)
        result.numbers["seconds lost to the crash"] = lost
        result.lists["interrupted"] = interrupted.map(\.0)
        result.lists["interrupted attempts"] = interrupted.flatMap { step in
            step.2.attempts.map { "\(step.0) attempt \($0.number) by \($0.worker): \($0.error ?? "succeeded")" }
        }
        result.lists["attempt errors"] = records.flatMap { $0.2.attempts.compactMap(\.error) }
        result.lists["images"] = pipelines.compactMap { pipeline in
            records.first { $0.2.id == pipeline.write.id && $0.2.state == .succeeded }.map { _ in "\(pipeline.index)" }
        }

        var notes = [
            "\(count) images × download → sepia → vignette → write PNG = \(records.count) durable operations in \(location)",
            fleet == 1
                ? "worker-1 (a child process) ran until every image but \(victim) was written and image \(victim)'s download was running, then was killed with SIGKILL"
                : "\(fleet) worker processes ran until every image but \(victim) was written and image \(victim)'s download was running; \(dead.name), which ran it, was killed with SIGKILL",
            fleet == 1
                ? "\(finishers) started; it rescued the download when \(dead.name)'s lease (2 s) expired and finished the pipeline"
                : "\(finishers) rescued the download when \(dead.name)'s lease (2 s) expired and finished the pipeline",
            "\(succeeded) of \(records.count) steps succeeded; \(once) ran exactly once (completed steps were not redone)",
            "interrupted: \(interrupted.map { "\($0.0) (\($0.2.attempts.count) attempts)" }.joined(separator: ", "))",
            String(format: "time lost to the crash: %.2f s (SIGKILL → the interrupted step's second attempt); whole run %.2f s", lost, finished.timeIntervalSince(started)),
        ]
        if let error = victimRecord?.attempts.first?.error { notes.append("attempt 1 ended: \(error)") }
        for note in notes { context.console.say("   " + note) }
        let timeline = DurableTimeline(
            title: "Durable: the image pipeline, a worker killed with SIGKILL, another finishing it",
            rows: records.map { ($0.0, $0.2.attempts) }, killed: killed, origin: started)
        let page = try context.output.write(Data(timeline.html(notes: notes).utf8), to: "11-durable.html")
        let trace = try context.output.write(Data(timeline.chromeTraceJSON().utf8), to: "11-durable.trace.json")
        result.files += [page, trace]
        result.files += pipelines.map { context.output.url.appendingPathComponent("11-durable-\($0.index).png") }
        return result
    }

    /// Where the chapter keeps its operations: `--postgres`, else a SQLite file in the output folder.
    static func storeLocation(in context: TourContext) -> DurableStoreLocation {
        if let url = context.settings.durablePostgresURL { return .postgres(url: url) }
        return .sqlite(path: context.output.url.appendingPathComponent("11-durable.sqlite").path)
    }

    static func enqueue(
        count: Int, server: ImageServer, queue: DurableQueue, work: URL, output: OutputFolder
    ) async throws -> [Pipeline] {
        var pipelines: [Pipeline] = []
        let retry = DurableRetry(.immediate, maximumAttempts: 3)
        for index in 1...count {
            func file(_ step: String) -> String { work.appendingPathComponent("\(index)-\(step).png").path }
            let download = try await queue.add(
                DurableDownload.self, input: .init(url: server.url(ofImage: index).absoluteString, file: file("download")),
                retry: retry)
            let sepia = try await queue.add(
                DurableSepia.self, input: .init(source: download, file: file("sepia")), dependencies: [download], retry: retry)
            let vignette = try await queue.add(
                DurableVignette.self, input: .init(source: sepia, file: file("vignette")), dependencies: [sepia], retry: retry)
            let write = try await queue.add(
                DurableWritePNG.self,
                input: .init(source: vignette, file: output.url.appendingPathComponent("11-durable-\(index).png").path),
                dependencies: [vignette], retry: retry)
            pipelines.append(Pipeline(index: index, download: download, sepia: sepia, vignette: vignette, write: write))
        }
        return pipelines
    }

    /// Reads the store until `condition` holds: a bounded wait for what a worker records.
    static func waitFor(_ what: String, log: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw TourError.durableWorker(reason: "waited 120 s for \(what); the workers said:\n\(output.suffix(2_000))")
    }
}

/// Runs async work from a chapter's own thread and waits for it.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let outcome = Protected<Result<T, any Error>?>(nil)
    Task {
        let result = await Result { try await body() }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.current!.get()
}

/// `blocking` for work that cannot fail.
func blocking(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}
