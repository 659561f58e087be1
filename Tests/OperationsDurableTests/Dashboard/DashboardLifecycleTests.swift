// Starting and stopping the dashboard's server.
#if Dashboard

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationsDashboard
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
}
#endif
