// The dashboard's routes and the JSON they return, against real stores.
#if Dashboard && SQLite

import DurableTestKinds
import Foundation
@_spi(Engine) import Operations
import OperationsDashboard
import OperationsDurable
#if PostgreSQL
import OperationsPostgres
#endif
import OperationsTestHelpers
import Testing

@Suite("Dashboard: routes and JSON")
struct DashboardRouteTests {
    /// The queue of that name in an overview.
    func queue(_ name: String, in overview: DashboardClient.Answer) -> [String: Any]? {
        let queues = (overview["store"] as? [String: Any])?["queues"] as? [[String: Any]]
        return queues?.first { $0["name"] as? String == name }
    }

    func counts(_ name: String, in overview: DashboardClient.Answer) -> [String: Int] {
        (queue(name, in: overview)?["counts"] as? [String: Any])?.compactMapValues { $0 as? Int } ?? [:]
    }

    @Test("the overview counts each queue's operations by state and lists the workers and the failures", arguments: StoreKind.all)
    func overview(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let work = DurableQueue(name: "default", store: store)
            let parked = DurableQueue(name: "parked", store: store)
            try await parked.setSuspended(true)
            let echo = try await work.add(Echo.self, input: 7)
            let flaky = try await work.add(Flaky.self, input: 5, retry: .never)
            for value in 0..<3 { try await parked.add(Echo.self, input: value) }
            try await withWorkers(store: store) { _ in
                _ = try await within(30, "the echo") { try await echo.value }
                try await pollUntil(30, "the flaky operation's failure") { try await flaky.state == .failed }
            }
            try await withDashboard(store: store) { _, client in
                let overview = try await client.get("/api/overview")
                #expect(overview.status == 200, "\(overview.text)")
                #expect(counts("default", in: overview)["succeeded"] == 1, "\(overview.text)")
                #expect(counts("default", in: overview)["failed"] == 1, "\(overview.text)")
                #expect(counts("parked", in: overview)["ready"] == 3, "\(overview.text)")
                #expect(queue("parked", in: overview)?["suspended"] as? Bool == true)
                let failures = (overview["store"] as? [String: Any])?["failures"] as? [[String: Any]] ?? []
                #expect(failures.contains { $0["error"] as? String == "flaky attempt 1 failed" && $0["kind"] as? String == "flaky" }, "\(failures)")
                let workers = try await client.get("/api/workers")
                #expect((workers.body as? [[String: Any]])?.contains { ($0["name"] as? String)?.hasPrefix("test0") == true } == true, "\(workers.text)")
            }
        }
    }

    @Test("an operation's route has its input, output, attempts with their errors, and its dependencies and dependents", arguments: StoreKind.all)
    func operation(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let first = try await queue.add(Node.self, input: .init(value: 1))
            let middle = try await queue.add(Node.self, input: .init(value: 2, parents: [first]), dependencies: [first])
            let last = try await queue.add(Node.self, input: .init(value: 3, parents: [middle]), dependencies: [middle])
            let flaky = try await queue.add(Flaky.self, input: 2, retry: DurableRetry(maximumAttempts: 2))
            try await withWorkers(store: store) { _ in
                _ = try await within(30, "the chain") { try await last.value }
                _ = try await within(30, "the flaky operation") { try await flaky.value }
            }
            try await withDashboard(store: store) { _, client in
                let answer = try await client.get("/api/operations/\(middle.id.rawValue)")
                #expect(answer.status == 200, "\(answer.text)")
                #expect(answer["state"] as? String == "succeeded")
                #expect(answer["output"] as? String == "3")
                #expect((answer["inputJSON"] as? [String: Any])?["value"] as? Int == 2, "\(answer.text)")
                let dependencies = answer["dependencies"] as? [[String: Any]] ?? []
                let dependents = answer["dependents"] as? [[String: Any]] ?? []
                #expect(dependencies.map { $0["id"] as? Int } == [Int(first.id.rawValue)], "\(answer.text)")
                #expect(dependents.map { $0["id"] as? Int } == [Int(last.id.rawValue)], "\(answer.text)")
                let retried = try await client.get("/api/operations/\(flaky.id.rawValue)")
                let attempts = retried["attempts"] as? [[String: Any]] ?? []
                #expect(attempts.count == 2, "\(retried.text)")
                #expect(attempts.first?["error"] as? String == "flaky attempt 1 failed", "\(retried.text)")
                #expect((attempts.first?["worker"] as? String)?.hasPrefix("test0") == true, "\(retried.text)")
            }
        }
    }

    @Test("a queue's operations come a page at a time, each once, in order", arguments: StoreKind.all)
    func paging(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            try await queue.setSuspended(true)
            var added: [Int] = []
            for value in 0..<7 { added.append(Int(try await queue.add(Echo.self, input: value).id.rawValue)) }
            var configuration = OperationsDashboard.Configuration(port: 0)
            configuration.pageSize = 3
            try await withDashboard(store: store, configuration: configuration) { _, client in
                var seen: [Int] = []
                var path = "/api/queue?name=default&state=ready"
                for _ in 0..<5 {
                    let page = try await client.get(path)
                    #expect(page.status == 200, "\(page.text)")
                    let operations = page["operations"] as? [[String: Any]] ?? []
                    #expect(operations.count <= 3)
                    seen += operations.compactMap { $0["id"] as? Int }
                    guard let next = page["next"] as? Int else { break }
                    path = "/api/queue?name=default&state=ready&after=\(next)"
                }
                #expect(seen == added)
            }
        }
    }

    @Test("search finds operations by id, by kind and by key", arguments: StoreKind.all)
    func search(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            try await queue.setSuspended(true)
            let keyed = try await queue.add(Echo.self, input: 1, key: "invoice-42")
            let other = try await queue.add(Work.self, input: 0)
            try await withDashboard(store: store) { _, client in
                func ids(_ query: String) async throws -> [Int] {
                    let answer = try await client.get("/api/search?q=\(query)")
                    #expect(answer.status == 200, "\(answer.text)")
                    return (answer["operations"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int }
                }
                let byID = try await ids("\(other.id.rawValue)")
                let byKey = try await ids("invoice-42")
                let byKind = try await ids("work")
                let none = try await ids("nothing-like-this")
                #expect(byID == [Int(other.id.rawValue)])
                #expect(byKey == [Int(keyed.id.rawValue)])
                #expect(byKind == [Int(other.id.rawValue)])
                #expect(none == [])
            }
        }
    }

    @Test("bad input is answered with a status and a sentence, and the server keeps serving")
    func badInput() async throws {
        try await withStore(StoreKind.named("SQLite")) { store in
            try await withDashboard(store: store) { _, client in
                let cases: [(String, Int, String)] = [
                    ("/api/operations/987654", 404, "is not stored"),
                    ("/api/operations/abc", 400, "is not an operation id"),
                    ("/api/queue?name=default&state=sleeping", 400, "state must be one of"),
                    ("/api/queue?name=default&state=ready&after=x", 400, "after must be an operation id"),
                    ("/api/search?q=", 400, "q is empty"),
                    ("/api/nothing-here", 404, "no such route"),
                ]
                for (path, status, message) in cases {
                    let answer = try await client.get(path)
                    #expect(answer.status == status, "\(path): \(answer.text)")
                    #expect(answer.error?.contains(message) == true, "\(path): \(answer.text)")
                }
                #expect(try await client.get("/api/overview").status == 200)
            }
        }
    }

    @Test("a request addressed to another host name, or an action from another site's page, is refused")
    func foreignRequests() async throws {
        try await withDefaultQueue(StoreKind.named("SQLite")) { queue, store in
            try await queue.setSuspended(true)
            var configuration = OperationsDashboard.Configuration(port: 0)
            configuration.actionToken = "s3cret"
            try await withDashboard(store: store, configuration: configuration) { dashboard, client in
                let port = try #require(dashboard.url?.port)
                let rebound = try await client.get("/api/overview", headers: ["Host": "attacker.example:\(port)"])
                #expect(rebound.status == 403, "\(rebound.text)")
                let fromAnotherSite = try await client.post(
                    "/api/queue/resume?name=default", token: "s3cret", headers: ["Origin": "http://attacker.example"])
                #expect(fromAnotherSite.status == 403, "\(fromAnotherSite.text)")
                #expect(try await queue.isSuspended)
                let local = try await client.get("/api/overview", headers: ["Host": "localhost:\(port)"])
                #expect(local.status == 200, "\(local.text)")
                let fromItsPage = try await client.post(
                    "/api/queue/resume?name=default", token: "s3cret", headers: ["Origin": "http://127.0.0.1:\(port)"])
                #expect(fromItsPage.status == 200, "\(fromItsPage.text)")
            }
        }
    }

    @Test("a queue whose name holds a slash and quotes is paged and acted on by its name")
    func unusualQueueName() async throws {
        try await withStore(StoreKind.named("SQLite")) { store in
            let name = "emails/high 'urgent' & \"more\""
            let queue = DurableQueue(name: name, store: store)
            try await queue.setSuspended(true)
            let added = try await queue.add(Echo.self, input: 1)
            var configuration = OperationsDashboard.Configuration(port: 0)
            configuration.actionToken = "s3cret"
            try await withDashboard(store: store, configuration: configuration) { _, client in
                let encoded = try #require(name.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                let page = try await client.get("/api/queue?name=\(encoded)&state=ready")
                #expect(page.status == 200, "\(page.text)")
                #expect((page["operations"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == [Int(added.id.rawValue)])
                let resumed = try await client.post("/api/queue/resume?name=\(encoded)", token: "s3cret")
                #expect(resumed.status == 200, "\(resumed.text)")
                #expect(try await !queue.isSuspended)
            }
        }
    }

    #if PostgreSQL
    @Test("a store that cannot be reached: the overview says so, reads answer 503, and the page is still served")
    func storeDown() async throws {
        // Nothing listens on port 1 of this machine.
        let store = PostgresOperationStore(configuration: try .init(url: "postgres://nobody@127.0.0.1:1/none"))
        defer { withExtendedLifetime(store) {} }
        var configuration = OperationsDashboard.Configuration(port: 0)
        configuration.readDeadline = .milliseconds(500)
        try await withDashboard(store: store, configuration: configuration) { _, client in
            let overview = try await client.get("/api/overview")
            #expect(overview.status == 200)
            let error = (overview["store"] as? [String: Any])?["error"] as? String
            #expect(error?.hasPrefix("the store cannot be reached") == true, "\(overview.text)")
            let operation = try await client.get("/api/operations/1")
            #expect(operation.status == 503, "\(operation.text)")
            let page = try await client.get("/")
            #expect(page.status == 200)
        }
        await store.shutdown()
    }
    #endif

}
#endif
