import Foundation
@testable import OperationsRecording
import Testing

/// What a reader sees in the pictures, from recordings made by hand (fixed times, no queue):
/// how each outcome is coloured in both views, and labels that stay clear of the bars and
/// the waiting strips of their row.
@Suite("Timeline as a reader sees it")
struct TimelineReadingTests {
    @Test("grouped: operations cancelled while running are drawn in the cancelled colour, failed ones in the failed colour, each beside the succeeded")
    func groupedOutcomes() throws {
        let recording = Recording.made(operations: [
            .made(0, "download 0", enqueued: 0, started: 0, finished: 300, outcome: .succeeded),
            .made(1, "download 1", enqueued: 0, started: 0, finished: 200, cancelled: 100, outcome: .cancelled(reason: nil)),
            .made(2, "download 2", enqueued: 0, started: 100, finished: 400, cancelled: 300, outcome: .cancelled(reason: nil)),
            .made(3, "download 3", enqueued: 0, started: 500, finished: 600, outcome: .failed(error: "boom")),
            .made(4, "download 4", enqueued: 0, started: 500, finished: 700, outcome: .succeeded),
        ])
        let svg = SVGElements(page: recording.html(maximumRows: 1))
        try #require(svg.error == nil)
        #expect(svg.elements.first?.attributes["data-mode"] == "grouped")
        let areas = svg.all("path", class: "running-area")
        let byOutcome = Dictionary(areas.map { ($0.attributes["data-outcome"] ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        #expect(Set(byOutcome.keys) == ["succeeded", "cancelled", "failed"])
        for (outcome, area) in byOutcome {
            #expect(area.attributes["fill"] == TimelineStyle.colors[outcome], "\(outcome) area")
            #expect(area.attributes["fill-opacity"] == "1", "\(outcome) area is opaque: a stack, not a blend")
        }
        // Stacked, each band as tall as its operations: at most 1 succeeded ran at once, but
        // 3 operations in all (1 succeeded + 2 cancelled, at 100–200 ms).
        let succeeded = try #require(byOutcome["succeeded"]), cancelled = try #require(byOutcome["cancelled"])
        let failed = try #require(byOutcome["failed"])
        let succeededHeight = SVGElements.height(of: succeeded), stackHeight = SVGElements.height(of: cancelled)
        #expect(stackHeight > succeededHeight * 2.5 && stackHeight < succeededHeight * 3.5)
        #expect(SVGElements.height(of: failed) > succeededHeight * 1.5)
        // Painted top of the stack first: the lower bands are drawn over it.
        let order = areas.compactMap { $0.attributes["data-outcome"] }
        #expect(order.firstIndex(of: "succeeded")! > order.firstIndex(of: "cancelled")!)
        #expect(order.firstIndex(of: "cancelled")! > order.firstIndex(of: "failed")! || !order.contains("failed"))
        let page = recording.html(maximumRows: 1)
        #expect(page.contains("coloured by how they ended"))
    }

    @Test("one row per operation: a failed operation's bar is in the failed colour, a cancelled one's in the cancelled colour")
    func perOperationOutcomes() throws {
        let recording = Recording.made(operations: [
            .made(0, "sign in", enqueued: 0, started: 0, finished: 300, outcome: .failed(error: "wrong password")),
            .made(1, "post", enqueued: 0, started: 300, finished: 500, cancelled: 400, outcome: .cancelled(reason: "not signed in")),
            .made(2, "read", enqueued: 0, started: 500, finished: 1000, outcome: .succeeded),
        ])
        let svg = SVGElements(page: recording.html())
        try #require(svg.error == nil)
        let bars = svg.all("rect", class: "bar")
        #expect(bars.map { $0.attributes["fill"] ?? "" } == ["failed", "cancelled", "succeeded"].map { TimelineStyle.colors[$0]! })
    }

    @Test("one row per operation: the moment an operation was cancelled while running is marked on its bar")
    func cancelledWhileRunningIsMarked() throws {
        let recording = Recording.made(operations: [
            .made(0, "ignores isCancelled", enqueued: 0, started: 0, finished: 1000, cancelled: 250, outcome: .cancelled(reason: nil)),
            .made(1, "finished", enqueued: 0, started: 0, finished: 400, outcome: .succeeded),
            // Stopped as it was cancelled: no mark over its bar's colour.
            .made(2, "stops at once", enqueued: 0, started: 500, finished: 600, cancelled: 599.9, outcome: .cancelled(reason: nil)),
        ])
        let svg = SVGElements(page: recording.html())
        try #require(svg.error == nil)
        let marks = svg.all("line", class: "cancel-time")
        try #require(marks.count == 1)
        let timeline = TimelineSVG(recording, maximumRows: 400)
        let mark = marks[0]
        #expect(mark.row == 0)
        #expect(abs(Double(mark.attributes["x1"]!)! - timeline.x(250)) < 0.1)
        #expect(mark.attributes["data-t0"] == "250.0")
    }

    @Test("labels beside their bar never cross their row's waiting strip or bar; when there is no room beside the row, they sit on a plate")
    func labelsClearOfStrips() throws {
        let long = "a label far too long to fit anywhere but on the left"
        let recording = Recording.made(operations: [
            // Enqueued late, runs to the end: no room on the right, room left of the strip.
            .made(0, "row 14: download", enqueued: 500, started: 950, finished: 1000, outcome: .succeeded),
            // Enqueued at the start, runs to the end: no room on either side of the row.
            .made(1, "image 1: write", enqueued: 0, started: 960, finished: 1000, outcome: .succeeded),
            // Room on the right.
            .made(2, "image 2: write", enqueued: 0, started: 300, finished: 320, outcome: .succeeded),
            // Cancelled before it started, near the end.
            .made(3, "row 19: download", enqueued: 600, started: nil, finished: 990, cancelled: 990, outcome: .cancelled(reason: nil)),
            // Inside its bar.
            .made(4, "inside", enqueued: 0, started: 100, finished: 900, outcome: .succeeded),
            .made(5, long, enqueued: 700, started: 900, finished: 1000, outcome: .succeeded),
        ], duration: 1000)
        let svg = SVGElements(page: recording.html())
        try #require(svg.error == nil)
        let labels = svg.all("text", class: "label")
        try #require(labels.count == recording.operations.count)
        for operation in recording.operations {
            let label = try #require(labels.first { $0.row == operation.id })
            let extent = SVGElements.extent(ofLabel: label, text: operation.name)
            #expect(extent.lowerBound >= 0 && extent.upperBound <= TimelineStyle.defaultWidth, "\(operation.name) on the page")
            let plate = svg.elements.first { $0.row == operation.id && $0.className == "label-plate" && $0.attributes["visibility"] != "hidden" }
            for piece in svg.elements where piece.row == operation.id && (piece.className == "wait" || piece.className == "bar") {
                let x = Double(piece.attributes["x"]!)!, width = Double(piece.attributes["width"]!)!
                let covered = x..<(x + width)
                if piece.className == "bar", label.attributes["fill"] == "#fff" {
                    #expect(covered.lowerBound <= extent.lowerBound && extent.upperBound <= covered.upperBound, "\(operation.name) inside its bar")
                } else if let plate {
                    let plateX = Double(plate.attributes["x"]!)!, plateWidth = Double(plate.attributes["width"]!)!
                    #expect(plateX <= extent.lowerBound && extent.upperBound <= plateX + plateWidth, "\(operation.name)'s plate covers it")
                    #expect(piece.className == "wait" || !covered.overlaps(extent), "\(operation.name) on a plate, clear of its bar")
                } else {
                    #expect(!covered.overlaps(extent), "\(operation.name) clear of its \(piece.className ?? "")")
                }
            }
        }
        // Where each one went.
        func anchor(_ id: Int) -> String? { labels.first { $0.row == id }?.attributes["text-anchor"] }
        #expect(anchor(0) == "end" && anchor(2) == "start" && anchor(3) == "end")
        #expect(labels.first { $0.row == 4 }?.attributes["fill"] == "#fff")
        #expect(svg.elements.contains { $0.row == 1 && $0.className == "label-plate" && $0.attributes["visibility"] != "hidden" })
        #expect(!svg.elements.contains { $0.row == 0 && $0.className == "label-plate" && $0.attributes["visibility"] != "hidden" })
    }
}

extension Recording {
    /// A recording made by hand: one queue, "scene", default limit; times in milliseconds.
    static func made(operations: [Operation], duration: Double? = nil) -> Recording {
        let end = duration ?? operations.compactMap { $0.finished.map { Double($0) / 1e6 } }.max() ?? 1
        return Recording(
            title: "Made", operations: operations,
            queues: [Queue(name: "scene", maxConcurrentOperationCount: -1, mostConcurrent: RecorderState.mostConcurrent(operations), group: "scene")],
            duration: UInt64(end * 1e6))
    }
}

extension Recording.Operation {
    /// An operation of queue 0, "scene", times in milliseconds.
    static func made(
        _ id: Int, _ name: String, enqueued: Double, started: Double?, finished: Double?, cancelled: Double? = nil,
        outcome: Recording.Outcome, dependencies: [Int] = []
    ) -> Recording.Operation {
        func ns(_ milliseconds: Double?) -> UInt64? { milliseconds.map { UInt64($0 * 1e6) } }
        return Recording.Operation(
            id: id, name: name, queue: "scene", queueIndex: 0, group: OperationRecorder.groupByNameWithoutNumbers(name, "scene"),
            enqueued: ns(enqueued)!, started: ns(started), finished: ns(finished), cancelled: ns(cancelled), outcome: outcome,
            dependencies: dependencies)
    }
}

extension SVGElements {
    /// The horizontal extent of a label, its width estimated as the layout without a browser does.
    static func extent(ofLabel label: Element, text: String) -> Range<Double> {
        let x = Double(label.attributes["x"]!)!, width = Double(text.count) * TimelineStyle.characterWidth
        return label.attributes["text-anchor"] == "end" ? (x - width)..<x : x..<(x + width)
    }

    /// How tall an area path reaches above its base (its first point), in its own units.
    static func height(of path: Element) -> Double {
        let d = path.attributes["d"] ?? ""
        let base = Double(d.split(separator: " ").first.flatMap { $0.split(separator: ",").last } ?? "0") ?? 0
        let tops = d.split(separator: " ").filter { $0.hasPrefix("V") }.compactMap { Double($0.dropFirst()) }
        return base - (tops.min() ?? base)
    }
}
