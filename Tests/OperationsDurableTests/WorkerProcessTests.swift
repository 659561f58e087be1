// Several worker processes on one PostgreSQL: graphs, the cluster-wide limit, a worker
// killed with SIGKILL, a server restart, a cancel from another process.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import OperationsDurable
import OperationsPostgres
import PostgresNIO
import Testing

@Suite(
    "Worker processes", .serialized,
    .enabled(if: PostgresCluster.isAvailable, Comment(rawValue: PostgresCluster.missingMessage)),
    .timeLimit(.minutes(5)))
struct WorkerProcessTests {
    @Test("three worker processes run a diamond and a fan-in of 1,000 within the queue's limit")
    func diamondAndFanIn() async throws {
        let cluster = try await PostgresCluster.shared()
        try await cluster.withWorkerProcessesOnNewDatabase { store, database, workers in
            let queue = DurableQueue(name: "default", store: store)
            try await queue.setMaxConcurrentOperationCount(6)
            let bottom = try await addDiamond(to: queue)
            let leafCount = 1_000 / sanitizedScale
            let leaves = try await store.enqueue((0..<leafCount).map { index in try queue.request(Echo.self, input: index) })
            let sink = try await queue.add(Echo.self, input: -1, dependencies: leaves.map(\.id))
            for index in 0..<3 { try workers.start(name: "w\(index)", port: cluster.port, database: database) }
            let started = ContinuousClock.now
            try await expectFanInAndDiamondResults(sink: sink, bottom: bottom, workers: workers)
            print("diamond and fan-in of 1,000 on 3 worker processes: \(ContinuousClock.now - started)")
            let invariants = StoreInvariants(store: store)
            try await invariants.check()
            let attempts = try await invariants.attempts(queue: "default")
            expectFanInAndDiamondAttempts(attempts, leafCount: leafCount)
            let sinkStart = try #require(try await sink.attempts.first).start
            #expect(attempts.filter { $0.end! > sinkStart && $0.start < sinkStart }.isEmpty, "the sink started after every leaf ended")
            await store.shutdown()
        }
    }

    @Test("the operation of a worker killed with SIGKILL is rescued and completes, the interrupted attempt recorded")
    func killedWorkerIsRescued() async throws {
        let cluster = try await PostgresCluster.shared()
        try await cluster.withWorkerProcessesOnNewDatabase { store, database, workers in
            try await checkKilledWorkerIsRescued(
                store: store, workers: workers, workerCount: 3, otherCount: 30, printedPrefix: ""
            ) { name in try workers.start(name: name, port: cluster.port, database: database, concurrency: 2) }
            try await StoreInvariants(store: store).check()
            await store.shutdown()
        }
    }

    @Test(
        "a worker killed between a claim and its body, or between a body's end and its record, leaves the operation to be rescued and finished once",
        arguments: WorkerProcesses.CrashPoint.all)
    func crashAtAPointOfTheLifeIsRescued(_ crash: WorkerProcesses.CrashPoint) async throws {
        let cluster = try await PostgresCluster.shared()
        try await cluster.withWorkerProcessesOnNewDatabase { store, database, workers in
            try await checkWorkerCrashedAtAPointIsRescued(store: store, workers: workers, crash: crash) { name, dying in
                try workers.start(name: name, port: cluster.port, database: database, dying: dying)
            }
            try await StoreInvariants(store: store).check()
            await store.shutdown()
        }
    }

    @Test("after PostgreSQL restarts mid-run, workers reconnect and everything completes")
    func restartMidRun() async throws {
        let cluster = try await PostgresCluster.start()
        defer { cluster.removeNow() }
        try await cluster.withWorkerProcessesOnNewDatabase { store, database, workers in
            let queue = DurableQueue(name: "default", store: store)
            let total = 600
            let handles = try await store.enqueue((0..<total).map { _ in try queue.request(Work.self, input: 50) })
            for index in 0..<3 { try workers.start(name: "w\(index)", port: cluster.port, database: database) }
            let invariants = StoreInvariants(store: store)
            try await pollUntil(60, "a tenth finished") {
                try await invariants.count("SELECT count(*)::integer FROM durable_operations WHERE state = 'succeeded'") >= total / 10
            }
            try await cluster.restart()
            let restarted = ContinuousClock.now
            let finishedBeforeRestart = try await invariants.count(
                "SELECT count(*)::integer FROM durable_operations WHERE state = 'succeeded'")
            #expect(finishedBeforeRestart < total, "the restart came after the run")
            do {
                try await pollUntil(120, "every operation finished") {
                    (try? await invariants.count("SELECT count(*)::integer FROM durable_operations WHERE state IN ('waiting', 'ready', 'running')")) == 0
                }
            } catch {
                let unfinished = (try? await invariants.describeUnfinished()) ?? "(the store could not be read)"
                Issue.record("\(error)\n\(unfinished)\n\(workers.logs())")
                throw error
            }
            print("\(total) operations (\(finishedBeforeRestart) done before the restart) finished \(ContinuousClock.now - restarted) after it")
            #expect(handles.count == total)
            try await invariants.check()
            await store.shutdown()
        }
    }

    @Test("after each of ten PostgreSQL restarts, worker processes start operations again within a fraction of the store call timeout", notUnderSanitizers)
    func repeatedRestartsPauseBriefly() async throws {
        let cluster = try await PostgresCluster.start()
        defer { cluster.removeNow() }
        try await cluster.withWorkerProcessesOnNewDatabase { store, database, workers in
            let queue = DurableQueue(name: "default", store: store)
            // More than the run can finish: work goes on through every restart.
            _ = try await queue.addOperations(Work.self, inputs: Array(repeating: 40, count: 8_000))
            for index in 0..<2 { try workers.start(name: "w\(index)", port: cluster.port, database: database) }
            let latestStart = "SELECT extract(epoch FROM max(started_at))::double precision FROM durable_attempts"
            try await pollUntil(60, "the first start") { (try? await cluster.double(latestStart, database: database)) != nil }
            var pauses: [Double] = []
            try await workers.recordingLogsOnFailure { () async throws in
                for _ in 0..<10 {
                    try await cluster.restart()
                    // The server's clock once it is back, read over a fresh connection.
                    let back = try #require(try await cluster.double(
                        "SELECT extract(epoch FROM clock_timestamp())::double precision", database: database))
                    try await pollUntil(60, "a start after the restart") {
                        ((try? await cluster.double(latestStart, database: database)) ?? 0) > back
                    }
                    let first = try #require(try await cluster.double(
                        "SELECT extract(epoch FROM min(started_at))::double precision FROM durable_attempts WHERE started_at > to_timestamp(\(back))",
                        database: database))
                    pauses.append(first - back)
                }
            }
            print("pauses after 10 restarts (s): \(pauses.map { String(format: "%.3f", $0) }.joined(separator: ", "))")
            // A call stuck until the store call timeout (10 s) paused the workers for all of it.
            #expect(pauses.max()! < 5, "\(pauses)\n\(pauses.max()! < 5 ? "" : workers.logs())")
            await store.shutdown()
        }
    }

    @Test("a cancel from this process stops a body running in a worker process")
    func cancelReachesAnotherProcess() async throws {
        let cluster = try await PostgresCluster.shared()
        try await cluster.withWorkerProcessesOnNewDatabase { store, database, workers in
            let queue = DurableQueue(name: "default", store: store)
            try workers.start(name: "w0", port: cluster.port, database: database)
            let held = try await queue.add(Hold.self, input: 99)
            let done = try await queue.add(Echo.self, input: 1)
            try await pollUntil(60, "the held body started") { try await held.state == .running }
            let cancelled = ContinuousClock.now
            try await held.cancel(reason: "stopped from the test process")
            await #expect(throws: DurableError.self) { try await within(30, "the cancelled body") { try await held.value } }
            let elapsed = ContinuousClock.now - cancelled
            print("a cancel reached a body in another process and was recorded in \(elapsed)")
            #expect(try await held.outcome == .cancelled("stopped from the test process"))
            #expect(try await within(30, "the other operation") { try await done.value } == 1)
            try await StoreInvariants(store: store).check(cancelled: [held.id.rawValue])
            await store.shutdown()
        }
    }
}
#endif
