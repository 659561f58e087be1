import Foundation
@testable import OperationsRecording
import Testing

/// Dependency arrows between rows that are not next to each other: routed so that they
/// cross none of the rows in between.
@Suite("Timeline dependency arrows")
struct DependencyArrowTests {
    /// An arrow's segments, as drawn: (x1, y1, x2, y2).
    typealias Segment = (x1: Double, y1: Double, x2: Double, y2: Double)

    /// The arrows of a page, each as its segments in order (the last one carries the head).
    static func routes(_ svg: SVGElements) -> [[Segment]] {
        var routes: [[Segment]] = [], current: [Segment] = []
        for element in svg.elements where element.name == "line" && (element.className == "dependency-leg" || element.className == "dependency") {
            let a = element.attributes
            current.append((Double(a["x1"]!)!, Double(a["y1"]!)!, Double(a["x2"]!)!, Double(a["y2"]!)!))
            if element.className == "dependency" {
                routes.append(current)
                current = []
            }
        }
        return routes
    }

    /// The boxes of an operation row's waiting strip and bar.
    static func boxes(ofRow id: Int, in svg: SVGElements) -> [(x: ClosedRange<Double>, y: ClosedRange<Double>)] {
        svg.elements.filter { $0.row == id && $0.name == "rect" && ($0.className == "bar" || $0.className == "wait") }.map { rect in
            let a = rect.attributes
            let x = Double(a["x"]!)!, y = Double(a["y"]!)!
            return (x...(x + Double(a["width"]!)!), y...(y + Double(a["height"]!)!))
        }
    }

    static func crosses(_ segment: Segment, _ box: (x: ClosedRange<Double>, y: ClosedRange<Double>)) -> Bool {
        let xs = min(segment.x1, segment.x2)...max(segment.x1, segment.x2)
        let ys = min(segment.y1, segment.y2)...max(segment.y1, segment.y2)
        return xs.overlaps(box.x) && ys.overlaps(box.y)
    }

    @Test("an arrow from one queue to another goes around a bar running in between, from the dependency's end into the dependent's start")
    func arrowAcrossQueuesAvoidsRowsInBetween() throws {
        func ns(_ milliseconds: Double) -> UInt64 { UInt64(milliseconds * 1e6) }
        func operation(_ id: Int, _ name: String, queue: Int, started: Double, finished: Double, dependencies: [Int] = []) -> Recording.Operation {
            Recording.Operation(
                id: id, name: name, queue: queue == 0 ? "download" : "filter", queueIndex: queue, group: name, enqueued: 0,
                started: ns(started), finished: ns(finished), cancelled: nil, outcome: .succeeded, dependencies: dependencies)
        }
        // "unrelated" runs across the moment "sepia" waits for "download": the straight
        // line between them would go through its bar.
        let operations = [
            operation(0, "download", queue: 0, started: 0, finished: 400),
            operation(1, "unrelated", queue: 0, started: 100, finished: 900),
            operation(2, "unrelated too", queue: 0, started: 300, finished: 700),
            operation(3, "sepia", queue: 1, started: 450, finished: 800, dependencies: [0]),
        ]
        let recording = Recording(
            title: "Across queues", operations: operations,
            queues: [
                .init(name: "download", maxConcurrentOperationCount: -1, mostConcurrent: 3, group: "download"),
                .init(name: "filter", maxConcurrentOperationCount: -1, mostConcurrent: 1, group: "filter"),
            ],
            duration: ns(1000))
        let svg = SVGElements(page: recording.html())
        try #require(svg.error == nil)
        let route = try #require(Self.routes(svg).first)
        #expect(Self.routes(svg).count == 1)
        for row in [1, 2] {
            for box in Self.boxes(ofRow: row, in: svg) {
                #expect(!route.contains { Self.crosses($0, box) }, "the arrow crosses row \(row)")
            }
        }
        // Connected, from the end of the dependency's bar to the start of the dependent's.
        for (earlier, later) in zip(route, route.dropFirst()) {
            #expect(earlier.x2 == later.x1 && earlier.y2 == later.y1)
        }
        let bars = svg.all("rect", class: "bar").map { Double($0.attributes["x"]!)!...(Double($0.attributes["x"]!)! + Double($0.attributes["width"]!)!) }
        #expect(abs(route.first!.x1 - bars[0].upperBound) < 0.2)
        #expect(abs(route.last!.x2 - bars[3].lowerBound) < 0.2)
        #expect(route.last!.y1 == route.last!.y2, "the head arrives along the dependent's row")
    }

    @Test("an arrow between neighbouring rows drops just before the dependent's start")
    func arrowBetweenNeighboursStaysShort() throws {
        let recording = recordSmallScene()
        let svg = SVGElements(page: recording.html())
        try #require(svg.error == nil)
        let routes = Self.routes(svg)
        #expect(routes.count == 2)
        for route in routes {
            let head = try #require(route.last)
            #expect(abs(head.x2 - head.x1 - TimelineSVG.arrowLead) < 0.2)
        }
    }
}
