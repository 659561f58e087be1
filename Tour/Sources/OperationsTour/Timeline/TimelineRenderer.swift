import Foundation

/// Renders a finished `Timeline` as a self-contained HTML page with an SVG chart, and as a
/// Chrome trace-event JSON file (open it in Perfetto or chrome://tracing).
public enum TimelineRenderer {
    static let colors: [Timeline.Outcome: String] = [
        .finished: "#3b9c5a", .cancelled: "#e69b2e", .failed: "#cf3d3d", .unfinished: "#8a8a8a",
    ]

    /// The HTML page: lanes of concurrency per queue, one bar (`class="bar"`) per operation from
    /// start to finish, coloured by outcome, with its dependencies drawn as arrows.
    public static func html(_ timeline: Timeline, bars: [Timeline.Bar], identities: [ObjectIdentifier], origin: UInt64, notes: [String]) -> String {
        let end = bars.compactMap(\.end).max().map { $0 - origin } ?? 1
        let span = Double(max(end, 1))
        let laneCount = (bars.map(\.lane).max() ?? 0) + 1
        let left = 170.0, width = 900.0, laneHeight = 26.0, top = 30.0
        let height = top + Double(laneCount) * laneHeight + 30
        func x(_ time: UInt64) -> Double { left + Double(time - origin) / span * width }
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(left + width + 20))\" height=\"\(Int(height))\" font-family=\"sans-serif\" font-size=\"11\">\n"
        svg += "<defs><marker id=\"arrow\" markerWidth=\"6\" markerHeight=\"6\" refX=\"5\" refY=\"3\" orient=\"auto\"><path d=\"M0,0 L6,3 L0,6 z\" fill=\"#555\"/></marker></defs>\n"
        // Lanes and the time axis.
        var laneNames: [Int: String] = [:]
        var firstLane: [String: Int] = [:]
        for bar in bars where bar.start != nil { firstLane[bar.queue] = min(firstLane[bar.queue] ?? .max, bar.lane) }
        for bar in bars where laneNames[bar.lane] == nil && bar.start != nil {
            laneNames[bar.lane] = "\(bar.queue) · \(bar.lane - firstLane[bar.queue]! + 1)"
        }
        for lane in 0..<laneCount {
            let y = top + Double(lane) * laneHeight
            svg += "<rect x=\"\(left)\" y=\"\(y)\" width=\"\(width)\" height=\"\(laneHeight - 2)\" fill=\"\(lane % 2 == 0 ? "#f4f4f4" : "#fafafa")\"/>"
            svg += "<text x=\"4\" y=\"\(y + 16)\">\(escape(laneNames[lane] ?? "slot \(lane)"))</text>\n"
        }
        for tick in 0...10 {
            let time = Double(tick) / 10 * span
            let tx = left + Double(tick) / 10 * width
            svg += "<line x1=\"\(tx)\" y1=\"\(top - 6)\" x2=\"\(tx)\" y2=\"\(height - 24)\" stroke=\"#ddd\"/>"
            svg += "<text x=\"\(tx - 12)\" y=\"\(top - 10)\">\(String(format: "%.2f s", time / 1e9))</text>\n"
        }
        // Bars.
        var position: [ObjectIdentifier: (x0: Double, x1: Double, y: Double)] = [:]
        for (bar, identity) in zip(bars, identities) {
            guard let start = bar.start else { continue }
            let x0 = x(start), x1 = max(x(bar.end ?? start), x0 + 2)
            let y = top + Double(bar.lane) * laneHeight + 3
            position[identity] = (x0, x1, y)
            let duration = Double((bar.end ?? start) - start) / 1e6
            svg += "<rect class=\"bar\" data-outcome=\"\(bar.outcome.rawValue)\" x=\"\(f(x0))\" y=\"\(f(y))\" width=\"\(f(x1 - x0))\" height=\"\(laneHeight - 8)\" rx=\"3\" fill=\"\(colors[bar.outcome]!)\">"
            svg += "<title>\(escape(bar.name)): \(bar.outcome.rawValue), \(String(format: "%.1f", duration)) ms</title></rect>"
            if x1 - x0 > 40 {
                let label = bar.name.components(separatedBy: " (").first ?? bar.name
                svg += "<text x=\"\(f(x0 + 3))\" y=\"\(f(y + 13))\" fill=\"white\" pointer-events=\"none\">\(escape(String(label.prefix(Int((x1 - x0) / 6)))))</text>"
            }
            svg += "\n"
        }
        // Dependencies: from the end of the dependency to the start of the dependent.
        for (bar, identity) in zip(bars, identities) {
            guard let to = position[identity] else { continue }
            for dependency in bar.dependencies {
                guard let from = position[dependency] else { continue }
                svg += "<line class=\"dependency\" x1=\"\(f(from.x1))\" y1=\"\(f(from.y + 9))\" x2=\"\(f(to.x0))\" y2=\"\(f(to.y + 9))\" stroke=\"#555\" stroke-width=\"1\" marker-end=\"url(#arrow)\"/>\n"
            }
        }
        // Legend.
        var legendX = left
        for outcome in [Timeline.Outcome.finished, .cancelled, .failed] {
            svg += "<rect x=\"\(legendX)\" y=\"\(height - 18)\" width=\"12\" height=\"12\" fill=\"\(colors[outcome]!)\"/><text x=\"\(legendX + 16)\" y=\"\(height - 8)\">\(outcome.rawValue)</text>"
            legendX += 90
        }
        svg += "\n</svg>"
        let counts = Dictionary(grouping: bars, by: \.outcome).mapValues(\.count)
        let summary = "\(bars.count) operations: \(counts[.finished] ?? 0) finished, \(counts[.cancelled] ?? 0) cancelled, \(counts[.failed] ?? 0) failed"
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(timeline.title))</title>
            <style>body{font-family:sans-serif;margin:24px;color:#222}p{margin:4px 0}.notes{color:#555}</style></head>
            <body><h1>\(escape(timeline.title))</h1><p>\(summary), over \(String(format: "%.2f", span / 1e9)) s.</p>
            \(notes.map { "<p class=\"notes\">\(escape($0))</p>" }.joined(separator: "\n"))
            \(svg)
            </body></html>

            """
    }

    /// Chrome trace events: a complete ("X") event per operation that ran, one thread per lane.
    public static func traceJSON(_ timeline: Timeline, bars: [Timeline.Bar], origin: UInt64) throws -> Data {
        var events: [[String: Any]] = []
        for bar in bars {
            guard let start = bar.start else { continue }
            events.append([
                "name": bar.name, "cat": bar.outcome.rawValue, "ph": "X", "pid": 1, "tid": bar.lane,
                "ts": Double(start - origin) / 1000, "dur": Double((bar.end ?? start) - start) / 1000,
                "args": ["queue": bar.queue, "outcome": bar.outcome.rawValue, "worker slot": bar.slot],
            ])
        }
        var laneNames: [Int: String] = [:]
        for bar in bars where laneNames[bar.lane] == nil && bar.start != nil { laneNames[bar.lane] = "\(bar.queue) · lane \(bar.lane)" }
        for (lane, name) in laneNames.sorted(by: { $0.key < $1.key }) {
            events.append(["name": "thread_name", "ph": "M", "pid": 1, "tid": lane, "args": ["name": name]])
        }
        let document: [String: Any] = ["traceEvents": events, "displayTimeUnit": "ms", "otherData": ["title": timeline.title]]
        return try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    static func f(_ value: Double) -> String { String(format: "%.1f", value) }
}
