// Starting and stopping the dashboard's server.
#if Dashboard && SQLite

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationsDashboard
import class Operations.OperationQueue
import Testing

@Suite("Dashboard: starting and stopping")
struct DashboardLifecycleTests {
    @Test("starts made at the same time share one server; stop closes it, and a later start serves again")
    func startsAtOnce() async throws {
        let dashboard = OperationsDashboard(configuration: .init(port: 0))
        let urls = try await withThrowingTaskGroup(of: URL.self) { group in
            for _ in 0..<8 { group.addTask { try await dashboard.start() } }
            return try await group.reduce(into: Set<URL>()) { $0.insert($1) }
        }
        #expect(urls.count == 1, "one server, not \(urls.count): \(urls.sorted { $0.absoluteString < $1.absoluteString })")
        #expect(dashboard.url.map { urls.contains($0) } == true)
        await dashboard.stop()
        #expect(dashboard.url == nil)
        // Nothing is left listening: a server started by a start that lost a race would be.
        for url in urls {
            await #expect(throws: (any Error).self, "\(url) still answers after stop") {
                _ = try await URLSession.shared.data(from: url.appendingPathComponent("api/overview"))
            }
        }
        let again = try await dashboard.start()
        let (_, response) = try await URLSession.shared.data(from: again.appendingPathComponent("api/overview"))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        await dashboard.stop()
    }

    @Test("a queue watched before a stop is shown after the next start")
    func watchesOutliveARestart() async throws {
        let dashboard = OperationsDashboard(configuration: .init(port: 0))
        let queue = OperationQueue()
        queue.name = "kept-across-restarts"
        dashboard.watch(queue)
        _ = try await dashboard.start()
        await dashboard.stop()
        let url = try await dashboard.start()
        let (data, _) = try await URLSession.shared.data(from: url.appendingPathComponent("api/overview"))
        let local = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["local"] as? [[String: Any]]
        #expect(local?.map { $0["name"] as? String } == ["kept-across-restarts"])
        await dashboard.stop()
    }

    @Test("a start made while a stop closes the server waits for it, then serves; stops made at once all return")
    func startDuringStop() async throws {
        let dashboard = OperationsDashboard(configuration: .init(port: 0))
        let first = try await dashboard.start()
        // Both stops and the start are begun together; whatever their order, the dashboard
        // ends serving on one new address, and the first one no longer answers.
        async let stopA: Void = dashboard.stop()
        async let stopB: Void = dashboard.stop()
        async let restarted = dashboard.start()
        _ = await (stopA, stopB)
        let url = try await restarted
        if url != first {
            await #expect(throws: (any Error).self) {
                _ = try await URLSession.shared.data(from: first.appendingPathComponent("api/overview"))
            }
        }
        if let serving = dashboard.url {
            let (_, response) = try await URLSession.shared.data(from: serving.appendingPathComponent("api/overview"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
        }
        await dashboard.stop()
        #expect(dashboard.url == nil)
    }
}
#endif
