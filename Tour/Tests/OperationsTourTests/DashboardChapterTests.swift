import Foundation
@testable import OperationsTour
import OperationsDurable
import Testing

@Suite("The dashboard chapter", .timeLimit(.minutes(3)))
struct DashboardChapterTests {
    @Test("dashboard: the page serves the durable pipeline and the in-process queue; with Chromium, four screenshots of them")
    func dashboard() async throws {
        // The chapter runs the durable chapter first, whose workers are `operations-demo`.
        let (result, context) = try await runChapter(DashboardChapter.self, durableWorkers: true)
        let settings = context.settings
        defer { try? FileManager.default.removeItem(at: context.output.url) }

        // What the overview said while the page was up.
        #expect(result.numbers["durable succeeded"] == Double(settings.imageCount * 4))
        #expect(result.numbers["durable ready"] == 1, "the extra image's download, no worker alive")
        #expect(result.numbers["durable waiting"] == 1, "its sepia step")
        #expect(result.numbers["in-process timeline entries"] == Double(settings.imageCount + 2))
        let waits = result.lists["in-process wait description"] ?? []
        #expect(waits.contains { $0.contains("\"publish\"") && $0.contains("waits for operation \"approval") }, "\(waits)")
        let overview = try #require(result.files.first { $0.lastPathComponent == "12-dashboard-overview.json" })
        #expect(try JSONSerialization.jsonObject(with: Data(contentsOf: overview)) is [String: Any])

        // The example operations are cancelled when the chapter ends: no later worker runs them.
        let (store, close) = try DurableChapter.storeLocation(in: context).open()
        for id in result.lists["example operations"] ?? [] {
            let record = try await store.record(of: DurableOperationID(rawValue: try #require(Int64(id))), includingAttempts: false)
            #expect(record?.state == .cancelled, "operation \(id)")
        }
        await close()

        let screenshots = files(result, ending: ".png").filter { $0.lastPathComponent.hasPrefix("12-dashboard-") }
        if Screenshots.findChromium() != nil || ProcessInfo.processInfo.environment["OPERATIONS_REQUIRE_CHROMIUM"] == "1" {
            #expect(screenshots.map(\.lastPathComponent) == [
                "12-dashboard-queues.png", "12-dashboard-operation.png", "12-dashboard-waiting.png", "12-dashboard-in-process.png",
            ])
            for file in screenshots {
                let (width, height, pixels) = try PNG.decode(Data(contentsOf: file))
                #expect(width == 1280 && height == 900, "\(file.lastPathComponent): \(width)×\(height)")
                // A page, not a blank: its text and tables make many colours.
                var colours = Set<UInt32>()
                for index in stride(from: 0, to: pixels.count, by: 4) {
                    colours.insert(UInt32(pixels[index]) << 16 | UInt32(pixels[index + 1]) << 8 | UInt32(pixels[index + 2]))
                }
                #expect(colours.count > 20, "\(file.lastPathComponent): \(colours.count) colours")
            }
        } else {
            #expect(screenshots.isEmpty)
            #expect(result.lists["screenshots skipped"]?.first?.contains("Chromium") == true)
        }
    }
}
