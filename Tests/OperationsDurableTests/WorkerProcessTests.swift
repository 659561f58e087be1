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
        let (store, database) = try await cluster.makeStore()
        let workers = WorkerProcesses()
        defer { workers.stopAll() }
        let queue = DurableQueue(name: "default", store: store)
        try await queue.setMaxConcurrentOperationCount(6)
        let top = try await queue.add(Node.self, input: .init(value: 1))
        let left = try await queue.add(Node.self, input: .init(value: 10, parents: [top]), dependencies: [top])
        let right = try await queue.add(Node.self, input: .init(value: 100, parents: [top]), dependencies: [top])
        let bottom = try await queue.add(Node.self, input: .init(value: 1000, parents: [left, right]), dependencies: [left, right])
        let leafCount = 1_000 / sanitizedScale
        let leaves = try await store.enqueue((0..<leafCount).map { index in try queue.request(Echo.self, input: index) })
        let sink = try await queue.add(Echo.self, input: -1, dependencies: leaves.map(\.id))
        for index in 0..<3 { try workers.start(name: "w\(index)", port: cluster.port, database: database) }
        let started = ContinuousClock.now
        do {
            #expect(try await within(120, "the fan-in's sink") { try await sink.value } == -1)
            #expect(try await within(60, "the diamond's bottom") { try await bottom.value } == 1112)
        } catch {
            Issue.record("\(error)\n\(workers.logs())")
            throw error
        }
        print("diamond and fan-in of 1,000 on 3 worker processes: \(ContinuousClock.now - started)")
        let invariants = StoreInvariants(store: store)
        try await invariants.check()
        let attempts = try await invariants.attempts(queue: "default")
        #expect(attempts.count == leafCount + 5)
        #expect(maximumOverlap(attempts) <= 6)
        #expect(Set(attempts.map(\.worker)).count == 3, "every worker process took part")
        let sinkStart = try #require(try await sink.attempts.first).start
        #expect(attempts.filter { $0.end! > sinkStart && $0.start < sinkStart }.isEmpty, "the sink started after every leaf ended")
        await store.shutdown()
    }

    @Test("the operation of a worker killed with SIGKILL is rescued and completes, the interrupted attempt recorded")
    func killedWorkerIsRescued() async throws {
        let cluster = try await PostgresCluster.shared()
        let (store, database) = try await cluster.makeStore()
        let workers = WorkerProcesses()
        defer { workers.stopAll() }
        let queue = DurableQueue(name: "default", store: store)
        for index in 0..<3 { try workers.start(name: "w\(index)", port: cluster.port, database: database, concurrency: 2) }
        let held = try await queue.add(Hold.self, input: 2)
        var others: [DurableHandle<Work>] = []
        for _ in 0..<30 { others.append(try await queue.add(Work.self, input: 20)) }
        try await eventually(60, "the held body started") { try await held.state == .running }
        let first = try #require(try await held.attempts.first)
        let name = String(first.worker.prefix { $0 != "-" })
        let killed = Date()
        workers.kill(name)
        let value = try await within(60, "the rescued operation") { try await held.value }
        #expect(value == 2)
        let attempts = try await held.attempts
        #expect(attempts.count == 2)
        #expect(attempts[0].error?.contains("stopped renewing its lease during attempt 1") == true, "\(attempts)")
        #expect(attempts[1].worker != first.worker)
        let rescue = attempts[1].start.timeIntervalSince(killed)
        // How fast is a measurement (printed), not an assertion: this runs on loaded machines.
        print("rescued \(String(format: "%.2f", rescue)) s after SIGKILL (default lease 5 s, heartbeat 1 s)")
        for other in others { _ = try await within(60, "the other work") { try await other.value } }
        try await StoreInvariants(store: store).check()
        await store.shutdown()
    }

    @Test(
        "a worker killed between a claim and its body, or between a body's end and its record, leaves the operation to be rescued and finished once",
        arguments: WorkerProcesses.CrashPoint.all)
    func crashAtAPointOfTheLifeIsRescued(_ crash: WorkerProcesses.CrashPoint) async throws {
        let cluster = try await PostgresCluster.shared()
        let (store, database) = try await cluster.makeStore()
        let workers = WorkerProcesses()
        defer { workers.stopAll() }
        let queue = DurableQueue(name: "default", store: store)
        let operation = try await queue.add(Work.self, input: 0)
        try workers.start(name: "dying", port: cluster.port, database: database, dying: crash)
        let status = try await within(60, "the worker's death") { await workers.exitStatus("dying") }
        #expect(status == 128 + SIGKILL, "\(workers.logs())")
        #expect(try await operation.state == .running, "the dead worker's claim holds until its lease expires")
        try workers.start(name: "rescuer", port: cluster.port, database: database)
        let value = try await within(60, "the rescued operation") { try await operation.value }
        #expect(value == 2, "the second attempt returned")
        let attempts = try await operation.attempts
        #expect(attempts.count == 2, "\(attempts)")
        #expect(attempts.first?.error?.contains("stopped renewing its lease during attempt 1") == true, "\(attempts)")
        #expect(attempts.last?.worker.hasPrefix("rescuer") == true)
        try await StoreInvariants(store: store).check()
        await store.shutdown()
    }

    @Test("after PostgreSQL restarts mid-run, workers reconnect and everything completes")
    func restartMidRun() async throws {
        let cluster = try await PostgresCluster.start()
        defer { cluster.removeNow() }
        let (store, database) = try await cluster.makeStore()
        let workers = WorkerProcesses()
        defer { workers.stopAll() }
        let queue = DurableQueue(name: "default", store: store)
        let total = 600
        let handles = try await store.enqueue((0..<total).map { _ in try queue.request(Work.self, input: 50) })
        for index in 0..<3 { try workers.start(name: "w\(index)", port: cluster.port, database: database) }
        let invariants = StoreInvariants(store: store)
        try await eventually(60, "a tenth finished") {
            try await invariants.count("SELECT count(*)::integer FROM durable_operations WHERE state = 'succeeded'") >= total / 10
        }
        try await cluster.restart()
        let restarted = ContinuousClock.now
        let finishedBeforeRestart = try await invariants.count(
            "SELECT count(*)::integer FROM durable_operations WHERE state = 'succeeded'")
        #expect(finishedBeforeRestart < total, "the restart came after the run")
        do {
            try await eventually(120, "every operation finished") {
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

    @Test("a cancel from this process stops a body running in a worker process")
    func cancelReachesAnotherProcess() async throws {
        let cluster = try await PostgresCluster.shared()
        let (store, database) = try await cluster.makeStore()
        let workers = WorkerProcesses()
        defer { workers.stopAll() }
        let queue = DurableQueue(name: "default", store: store)
        try workers.start(name: "w0", port: cluster.port, database: database)
        let held = try await queue.add(Hold.self, input: 99)
        let done = try await queue.add(Echo.self, input: 1)
        try await eventually(60, "the held body started") { try await held.state == .running }
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
#endif
