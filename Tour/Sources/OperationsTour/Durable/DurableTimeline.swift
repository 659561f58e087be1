// The durable chapter's page and trace: the attempts of each stored operation, drawn from
// the database (the bodies ran in other processes, where no recorder was).

import Foundation
import OperationsDurable

/// Attempts of operations over time, each worker process its own colour, with the moment a
/// worker was killed and the time lost until its step ran again.
struct DurableTimeline {
    let title: String
    let rows: [(label: String, attempts: [DurableAttempt])]
    let killed: Date
    let origin: Date

    private var end: Date {
        rows.flatMap(\.attempts).map { $0.end ?? $0.start }.max() ?? killed
    }

    /// The second attempt of the interrupted step, if one ran.
    private var rescued: Date? {
        rows.compactMap { $0.attempts.count > 1 ? $0.attempts[1].start : nil }.min()
    }

    /// Worker processes by their name (the part before the identity's random suffix).
    private var workers: [String] {
        var names: [String] = []
        for attempt in rows.flatMap(\.attempts) where !names.contains(Self.process(attempt.worker)) {
            names.append(Self.process(attempt.worker))
        }
        return names.sorted()
    }

    static func process(_ worker: String) -> String {
        guard let dash = worker.lastIndex(of: "-") else { return worker }
        return String(worker[..<dash])
    }

    private static let colours = ["#4e79a7", "#59a14f", "#f28e2b", "#b07aa1"]

    func html(notes: [String]) -> String {
        let labelWidth = 190.0
        let plotWidth = 720.0
        let rowHeight = 20.0
        let top = 30.0
        let span = max(end.timeIntervalSince(origin), 0.001)
        func x(_ date: Date) -> Double { labelWidth + max(0, date.timeIntervalSince(origin)) / span * plotWidth }
        let height = top + Double(rows.count) * rowHeight + 30
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(labelWidth + plotWidth + 20))\" height=\"\(Int(height))\" font-family=\"system-ui,sans-serif\" font-size=\"11\">\n"
        let killedX = x(killed)
        let rescuedX = rescued.map(x) ?? killedX
        svg += "<rect x=\"\(f(killedX))\" y=\"\(f(top - 6))\" width=\"\(f(max(rescuedX - killedX, 1)))\" height=\"\(f(Double(rows.count) * rowHeight + 6))\" fill=\"#e15759\" fill-opacity=\"0.15\"><title>lost to the crash: \(f(rescued.map { $0.timeIntervalSince(killed) } ?? 0)) s</title></rect>\n"
        svg += "<line x1=\"\(f(killedX))\" x2=\"\(f(killedX))\" y1=\"\(f(top - 10))\" y2=\"\(f(height - 24))\" stroke=\"#e15759\" stroke-width=\"2\"/>\n"
        svg += "<text x=\"\(f(killedX + 4))\" y=\"\(f(top - 14))\" fill=\"#e15759\">SIGKILL</text>\n"
        let workerNames = workers
        for (index, row) in rows.enumerated() {
            let y = top + Double(index) * rowHeight
            svg += "<text x=\"4\" y=\"\(f(y + 13))\">\(escape(row.label))</text>\n"
            for attempt in row.attempts {
                let colour = Self.colours[(workerNames.firstIndex(of: Self.process(attempt.worker)) ?? 0) % Self.colours.count]
                let startX = x(attempt.start)
                let endX = x(attempt.end ?? end)
                let failed = attempt.error != nil
                let tip = "attempt \(attempt.number) by \(attempt.worker): \(f(attempt.start.timeIntervalSince(origin)))–\(f((attempt.end ?? end).timeIntervalSince(origin))) s" + (attempt.error.map { ", \($0)" } ?? "")
                svg += "<rect class=\"attempt\" x=\"\(f(startX))\" y=\"\(f(y + 3))\" width=\"\(f(max(endX - startX, 2)))\" height=\"\(f(rowHeight - 6))\" fill=\"\(colour)\"\(failed ? " fill-opacity=\"0.45\" stroke=\"#e15759\" stroke-dasharray=\"3 2\"" : "")><title>\(escape(tip))</title></rect>\n"
            }
        }
        let axisY = top + Double(rows.count) * rowHeight + 16
        svg += "<text x=\"\(f(labelWidth))\" y=\"\(f(axisY))\">0 s</text><text x=\"\(f(labelWidth + plotWidth - 30))\" y=\"\(f(axisY))\">\(f(span)) s</text>\n"
        svg += "</svg>"
        let legend = workerNames.enumerated().map { index, name in
            "<span style=\"color:\(Self.colours[index % Self.colours.count])\">■</span> \(escape(name))"
        }.joined(separator: " &nbsp; ")
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <style>body{font-family:system-ui,sans-serif;margin:20px;color:#222}li{margin:2px 0}</style></head>
            <body><h1>\(escape(title))</h1>
            <p>One row per stored operation, one bar per attempt (from the database's attempts table), coloured by worker process: \(legend). A dashed bar is an attempt that did not succeed; the red band is the time between SIGKILL and the interrupted step's second attempt.</p>
            \(svg)
            <ul>\(notes.map { "<li>\(escape($0))</li>" }.joined())</ul>
            </body></html>

            """
    }

    /// A Chrome/Perfetto trace: a process per worker, a complete event per attempt, an
    /// instant event at the kill.
    func chromeTraceJSON() -> String {
        var events: [[String: Any]] = []
        let workerNames = workers
        for (index, name) in workerNames.enumerated() {
            events.append(["name": "process_name", "ph": "M", "pid": index + 1, "args": ["name": name]])
        }
        for (row, entry) in rows.enumerated() {
            for attempt in entry.attempts {
                let pid = (workerNames.firstIndex(of: Self.process(attempt.worker)) ?? 0) + 1
                let start = attempt.start.timeIntervalSince(origin) * 1e6
                let finish = (attempt.end ?? end).timeIntervalSince(origin) * 1e6
                var args: [String: Any] = ["attempt": attempt.number, "worker": attempt.worker]
                if let error = attempt.error { args["error"] = error }
                events.append([
                    "name": "\(entry.label) #\(attempt.number)", "ph": "X", "pid": pid, "tid": row + 1,
                    "ts": Int(start), "dur": Int(max(finish - start, 1)), "args": args,
                ])
            }
        }
        events.append(["name": "SIGKILL", "ph": "i", "s": "g", "pid": 1, "tid": 0, "ts": Int(killed.timeIntervalSince(origin) * 1e6)])
        let object: [String: Any] = ["traceEvents": events, "displayTimeUnit": "ms", "otherData": ["title": title]]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    private func f(_ value: Double) -> String { String(format: "%.2f", value) }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
