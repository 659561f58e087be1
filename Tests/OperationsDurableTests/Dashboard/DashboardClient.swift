// A client of the dashboard's JSON routes, for the tests.
#if Dashboard && SQLite

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationsDashboard
import OperationsDurable
import Testing

/// Sends requests to a started dashboard and decodes its JSON.
struct DashboardClient: Sendable {
    let base: URL

    /// An answer: the status and the body parsed as a JSON object (or array).
    struct Answer: @unchecked Sendable {
        // Unchecked: the parsed JSON is made of Foundation's immutable values and is only read.
        let status: Int
        let body: Any
        let text: String

        subscript(key: String) -> Any? { (body as? [String: Any])?[key] }
        var error: String? { self["error"] as? String }
    }

    func get(_ path: String, headers: [String: String] = [:]) async throws -> Answer {
        var request = URLRequest(url: URL(string: base.absoluteString + path)!)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try await send(request)
    }

    func post(_ path: String, token: String? = nil, headers: [String: String] = [:]) async throws -> Answer {
        var request = URLRequest(url: URL(string: base.absoluteString + path)!)
        request.httpMethod = "POST"
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try await send(request)
    }

    private func send(_ request: URLRequest) async throws -> Answer {
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let body = (try? JSONSerialization.jsonObject(with: data)) ?? [:]
        return Answer(status: status, body: body, text: String(decoding: data, as: UTF8.self))
    }
}

/// Runs `body` with a dashboard for `store` started on a free port, and stops it afterwards.
func withDashboard<T>(
    store: (any DurableOperationStore)?, configuration: OperationsDashboard.Configuration = .init(port: 0),
    _ body: (OperationsDashboard, DashboardClient) async throws -> T
) async throws -> T {
    let inspection = try store.map { store in
        try #require(store as? any DurableStoreInspection, "\(type(of: store)) cannot be inspected")
    }
    let dashboard = OperationsDashboard(store: inspection, configuration: configuration)
    let url = try await dashboard.start()
    do {
        let result = try await body(dashboard, DashboardClient(base: url))
        await dashboard.stop()
        return result
    } catch {
        await dashboard.stop()
        throw error
    }
}
#endif
