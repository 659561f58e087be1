import Foundation
@testable import OperationsTour
import Testing

@Suite("The durable chapter", .timeLimit(.minutes(3)))
struct DurableChapterTests {
    @Test("durable: a worker process killed with SIGKILL mid-pipeline; another finishes it, redoing only the interrupted step")
    func durable() async throws {
        let (result, context) = try await runChapter(DurableChapter.self, durableWorkers: true)
        let settings = context.settings
        defer { try? FileManager.default.removeItem(at: context.output.url) }

        let steps = try #require(result.numbers["steps"])
        #expect(steps == Double(settings.imageCount * 4))
        #expect(result.numbers["steps succeeded"] == steps)
        // The killed worker's download ran again; nothing that completed did. A step runs again
        // only because a lease ended (the kill, or, on a machine too loaded for a live worker to
        // renew its lease in time, that): every error an attempt ended with says so.
        let attempts = "\(result.lists["interrupted attempts"] ?? [])"
        #expect(try #require(result.numbers["attempts of the interrupted step"]) >= 2, "\(attempts)")
        #expect(result.lists["interrupted"]?.contains("image 2: download") == true, "\(attempts)")
        let errors = result.lists["attempt errors"] ?? []
        #expect(!errors.isEmpty && errors.allSatisfy { $0.contains("lease") }, "\(errors)")
        let lost = try #require(result.numbers["seconds lost to the crash"])
        #expect(lost > 0 && lost < 30, "lost \(lost) s")
        #expect(result.lists["images"]?.count == settings.imageCount)
        for file in result.files {
            #expect(FileManager.default.fileExists(atPath: file.path), "\(file.lastPathComponent) was written")
        }
        let page = try #require(result.files.first { $0.lastPathComponent == "11-durable.html" })
        let html = try String(contentsOf: page, encoding: .utf8)
        let allAttempts = try #require(result.numbers["attempts"])
        #expect(html.components(separatedBy: "class=\"attempt\"").count - 1 == Int(allAttempts), "a bar per attempt")
        #expect(html.contains("SIGKILL"))
        let trace = try #require(result.files.first { $0.lastPathComponent == "11-durable.trace.json" })
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: trace)) as? [String: Any]
        let events = try #require(json?["traceEvents"] as? [[String: Any]])
        #expect(events.filter { $0["ph"] as? String == "X" }.count == Int(allAttempts))
    }

    @Test("a worker process on PostgreSQL gets the URL, password included, through its environment, not its command line")
    func postgresPasswordStaysOffTheCommandLine() {
        let worker = DurableStoreLocation.postgres(url: "postgres://tour:s3cret@127.0.0.1:5432/tour").worker
        #expect(!worker.arguments.joined(separator: " ").contains("s3cret"), "\(worker.arguments)")
        #expect(worker.environment[DurableStoreLocation.postgresURLVariable] == "postgres://tour:s3cret@127.0.0.1:5432/tour")
    }
}
