// The dashboard's actions: refused without the token, done with it.
#if Dashboard && SQLite

import DurableTestKinds
import Foundation
import OperationsDashboard
import OperationsDurable
import OperationsTestHelpers
import Testing

@Suite("Dashboard: actions need the token")
struct DashboardActionTests {
    @Test("an empty action token is refused at start: no token could match it")
    func emptyToken() async throws {
        let dashboard = OperationsDashboard(configuration: .init(port: 0, actionToken: ""))
        await #expect(throws: DashboardError.self) { try await dashboard.start() }
        #expect(dashboard.url == nil)
    }

    @Test("with no token configured every action is refused as disabled, and nothing changes")
    func disabled() async throws {
        try await withDefaultQueue(StoreKind.named("SQLite")) { queue, store in
            try await queue.setSuspended(true)
            let pending = try await queue.add(Echo.self, input: 1)
            try await withDashboard(store: store) { _, client in
                for path in ["/api/queue/resume?name=default", "/api/operations/\(pending.id.rawValue)/cancel"] {
                    let answer = try await client.post(path, token: "anything")
                    #expect(answer.status == 403, "\(answer.text)")
                    #expect(answer.error?.contains("actions are disabled") == true)
                }
            }
            #expect(try await queue.isSuspended)
            #expect(try await pending.state == .ready)
        }
    }

    @Test("a retry the store refuses (its key is held by another pending operation) answers 409 with the store's sentence")
    func refusedRetry() async throws {
        try await withDefaultQueue(StoreKind.named("SQLite")) { queue, store in
            let failed = try await queue.add(Flaky.self, input: 2, key: "nightly", retry: .never)
            try await withWorkers(store: store) { _ in
                try await pollUntil(30, "the failure") { try await failed.state == .failed }
            }
            try await queue.setSuspended(true)
            let holder = try await queue.add(Flaky.self, input: 1, key: "nightly")
            var configuration = OperationsDashboard.Configuration(port: 0)
            configuration.actionToken = "s3cret"
            try await withDashboard(store: store, configuration: configuration) { _, client in
                let answer = try await client.post("/api/operations/\(failed.id.rawValue)/retry", token: "s3cret")
                #expect(answer.status == 409, "\(answer.text)")
                #expect(answer.error?.contains("is held by operation \(holder.id.rawValue)") == true, "\(answer.text)")
            }
            #expect(try await failed.state == .failed)
        }
    }

    @Test("an action without the token or with a wrong one is refused; with it, it takes effect", arguments: StoreKind.all)
    func tokenGated(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let failed = try await queue.add(Flaky.self, input: 2, retry: .never)
            try await withWorkers(store: store) { _ in
                try await pollUntil(30, "the failure") { try await failed.state == .failed }
            }
            try await queue.setSuspended(true)
            let pending = try await queue.add(Echo.self, input: 1)
            var configuration = OperationsDashboard.Configuration(port: 0)
            configuration.actionToken = "s3cret"
            try await withDashboard(store: store, configuration: configuration) { _, client in
                for token in [nil, "wrong", "s3cre", "s3cret2", "S3CRET"] as [String?] {
                    let answer = try await client.post("/api/queue/resume?name=default", token: token)
                    #expect(answer.status == 401, "\(token ?? "no token"): \(answer.text)")
                }
                #expect(try await queue.isSuspended)

                let limit = try await client.post("/api/queue/limit?name=default&value=3", token: "s3cret")
                #expect(limit.status == 200, "\(limit.text)")
                #expect(try await queue.maxConcurrentOperationCount == 3)
                let badLimit = try await client.post("/api/queue/limit?name=default&value=-1", token: "s3cret")
                #expect(badLimit.status == 400, "\(badLimit.text)")

                let cancel = try await client.post("/api/operations/\(pending.id.rawValue)/cancel", token: "s3cret")
                #expect(cancel.status == 200, "\(cancel.text)")
                #expect(try await pending.state == .cancelled)

                let refusedRetry = try await client.post("/api/operations/987654/retry", token: "s3cret")
                #expect(refusedRetry.status == 404, "\(refusedRetry.text)")
                let retry = try await client.post("/api/operations/\(failed.id.rawValue)/retry", token: "s3cret")
                #expect(retry.status == 200, "\(retry.text)")
                let resume = try await client.post("/api/queue/resume?name=default", token: "s3cret")
                #expect(resume.status == 200, "\(resume.text)")
                #expect(try await !queue.isSuspended)
            }
            // The retried operation runs again, and its second attempt succeeds.
            try await withWorkers(store: store) { _ in
                let attempt = try await within(30, "the retried operation") { try await failed.value }
                #expect(attempt == 2)
            }
        }
    }
}
#endif
