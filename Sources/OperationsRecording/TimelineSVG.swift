/// Draws a ``Recording`` as an SVG timeline: a header per queue (its limit, and how many of
/// its operations ran at once), then one row per operation, or per group of operations when
/// there are more than `maximumRows`.
///
/// Elements placed in time carry `data-t0`/`data-t1` (milliseconds): the page's script
/// moves them when the window is resized; the coordinates written here are for a
/// 1200-pixel-wide window, for readers without a script.
struct TimelineSVG {
    let recording: Recording
    let isGrouped: Bool
    let left: Double
    let span: Double
    var body = ""
    var y = TimelineStyle.axisHeight
    /// What each drawn row covers, top to bottom, for routing the dependency arrows.
    var rowSpans: [RowSpan] = []

    init(_ recording: Recording, maximumRows: Int) {
        self.recording = recording
        // Rows: one per operation, plus a header per queue.
        isGrouped = recording.operations.count + recording.queues.count > maximumRows
        left = isGrouped ? 230 : 12
        span = Double(max(recording.duration, 1)) / 1e6
    }

    var plotWidth: Double { TimelineStyle.defaultWidth - left - TimelineStyle.right }

    func x(_ milliseconds: Double) -> Double { left + milliseconds / span * plotWidth }

    static func ms(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e6 }

    /// The whole `<svg>` element.
    mutating func render() -> String {
        var rowCenters: [Int: Double] = [:]
        if isGrouped {
            // Queues named alike are drawn as one family ("row 1" … "row 100" → "row #").
            var families: [String] = []
            var members: [String: [Int]] = [:]
            for (index, queue) in recording.queues.enumerated() {
                if members[queue.group] == nil { families.append(queue.group) }
                members[queue.group, default: []].append(index)
            }
            var operationsByQueue = [[Recording.Operation]](repeating: [], count: recording.queues.count)
            for operation in recording.operations { operationsByQueue[operation.queueIndex].append(operation) }
            for family in families {
                let indices = members[family]!
                let operations = indices.flatMap { operationsByQueue[$0] }.sorted { $0.id < $1.id }
                let queues = indices.map { recording.queues[$0] }
                let limits = Set(queues.map(\.maxConcurrentOperationCount))
                let merged = Recording.Queue(
                    name: queues.count == 1 ? queues[0].name : "\(family) (\(queues.count) queues)",
                    maxConcurrentOperationCount: limits.count == 1 ? limits.first! : -1,
                    mostConcurrent: Self.runningSteps(operations).map(\.1).max() ?? 0, group: family)
                header(merged, operations: operations, limitIsPerQueue: queues.count > 1)
                var order: [String] = []
                var groups: [String: [Recording.Operation]] = [:]
                for operation in operations {
                    if groups[operation.group] == nil { order.append(operation.group) }
                    groups[operation.group, default: []].append(operation)
                }
                for name in order { groupRow(name, groups[name]!) }
            }
        }
        for (index, queue) in recording.queues.enumerated() where !isGrouped {
            let operations = recording.operations.filter { $0.queueIndex == index }
            header(queue, operations: operations)
            for operation in operations {
                rowCenters[operation.id] = y + TimelineStyle.rowHeight / 2
                operationRow(operation)
                for part in operation.parts { partRow(part, of: operation) }
            }
        }
        if !isGrouped { arrows(rowCenters) }
        let height = y + 8
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"timeline\" width=\"100%\" height=\"\(Markup.number(height))\""
        svg += " viewBox=\"0 0 \(Markup.number(TimelineStyle.defaultWidth)) \(Markup.number(height))\" data-left=\"\(Markup.number(left))\""
        svg += " data-right=\"\(Markup.number(TimelineStyle.right))\" data-span=\"\(span)\" data-mode=\"\(isGrouped ? "grouped" : "operations")\""
        svg += " font-family=\"system-ui, sans-serif\" font-size=\"11\">\n"
        svg += TimelineStyle.definitions + "\n"
        svg += axis(height: height)
        svg += body
        svg += "</svg>"
        return svg
    }

    // MARK: Rows

    private mutating func header(_ queue: Recording.Queue, operations: [Recording.Operation], limitIsPerQueue: Bool = false) {
        let limit = limitIsPerQueue ? -1 : queue.maxConcurrentOperationCount
        let limitText = limitIsPerQueue
            ? (queue.maxConcurrentOperationCount < 0 ? "limits differ or default" : "maxConcurrentOperationCount \(queue.maxConcurrentOperationCount) each")
            : limit < 0 ? "default limit" : "maxConcurrentOperationCount \(limit)"
        var text = "queue \(queue.name) · \(limitText) · at most \(queue.mostConcurrent) ran at once · \(operations.count) operation\(operations.count == 1 ? "" : "s")"
        let early = operations.filter(\.wasCancelledBeforeStart).count
        if early > 0 { text += " · \(early) cancelled before they started" }
        body += "<g class=\"queue\" data-queue=\"\(Markup.escape(queue.name))\">"
        body += "<rect x=\"0\" y=\"\(Markup.number(y))\" width=\"100%\" height=\"\(Markup.number(TimelineStyle.headerHeight - 4))\" fill=\"#eef1f6\"/>"
        body += "<text x=\"6\" y=\"\(Markup.number(y + 13))\" font-weight=\"600\">\(Markup.escape(text))</text>"
        // How many ran at once, under the text, with the limit as a dashed line.
        let top = y + 17, height = TimelineStyle.headerHeight - 22
        let scaleMax = Double(max(queue.mostConcurrent, limit > 0 && limit <= 64 ? limit : 0, 1))
        let steps = Self.runningSteps(operations)
        if !steps.isEmpty {
            var path = "M0,\(Markup.number(top + height))"
            for (time, count) in steps {
                path += " H\(Self.ms(time)) V\(Markup.number(top + height - Double(count) / scaleMax * height))"
            }
            path += " H\(span) V\(Markup.number(top + height)) Z"
            body += scaled("<path class=\"concurrency\" d=\"\(path)\" fill=\"#9db7dc\"><title>operations of queue \(Markup.escape(queue.name)) running at once (at most \(queue.mostConcurrent))</title></path>")
        }
        if limit > 0, limit <= 64 {
            let limitY = top + height - Double(limit) / scaleMax * height
            body += "<line class=\"limit\" x1=\"\(Markup.number(left))\" x2=\"\(Markup.number(left + plotWidth))\" data-t0=\"0\" data-t1=\"\(span)\" y1=\"\(Markup.number(limitY))\" y2=\"\(Markup.number(limitY))\" stroke=\"#333\" stroke-dasharray=\"4 3\"><title>limit: \(limit) at once</title></line>"
        }
        body += "</g>\n"
        y += TimelineStyle.headerHeight
    }

    private mutating func operationRow(_ operation: Recording.Operation) {
        let height = TimelineStyle.rowHeight
        let center = y + height / 2
        let end = Self.ms(recording.duration)
        let enqueued = Self.ms(operation.enqueued)
        let title = Markup.escape(details(operation))
        body += "<g class=\"operation\" data-id=\"\(operation.id)\" data-outcome=\"\(operation.outcome.name)\">"
        if operation.id % 2 == 0 {
            body += "<rect x=\"0\" y=\"\(Markup.number(y))\" width=\"100%\" height=\"\(Markup.number(height))\" fill=\"#fafbfc\"/>"
        }
        // Waiting: added → started (or → finished, for one that never ran).
        let waitEnd = (operation.started ?? operation.finished).map(Self.ms) ?? end
        body += rect("wait", t0: enqueued, t1: waitEnd, y: center - 3, height: 6, fill: "url(#waiting)", minimum: 1, title: title)
        var labelStart = enqueued, labelEnd = waitEnd, hasBar = false
        if operation.wasCancelledBeforeStart {
            let at = Self.ms(operation.finished ?? operation.cancelled ?? operation.enqueued)
            body += "<path class=\"cancelled-mark\" data-t0=\"\(at)\" transform=\"translate(\(Markup.number(x(at))) \(Markup.number(center)))\" d=\"M-4,-4 L4,4 M-4,4 L4,-4\" stroke=\"\(TimelineStyle.colors["cancelled"]!)\" stroke-width=\"2.2\"><title>\(title)</title></path>"
            labelEnd = at + 5 / plotWidth * span
        } else if let started = operation.started {
            let finish = operation.finished.map(Self.ms) ?? end
            let color = TimelineStyle.colors[operation.outcome.name]!
            body += rect("bar", t0: Self.ms(started), t1: finish, y: center - 7, height: 14, fill: color, minimum: 2, title: title)
            // Cancelled while running: when it was asked to stop, on its bar (unless it
            // stopped then, where the mark would only hide the bar's colour).
            if let cancelled = operation.cancelled, x(finish) - x(Self.ms(cancelled)) >= 3 {
                let at = Self.ms(cancelled)
                body += "<line class=\"cancel-time\" data-t0=\"\(at)\" data-t1=\"\(at)\" x1=\"\(Markup.number(x(at)))\" x2=\"\(Markup.number(x(at)))\" y1=\"\(Markup.number(center - 9))\" y2=\"\(Markup.number(center + 9))\" stroke=\"#222\" stroke-width=\"2\"><title>\(Markup.escape("\(operation.name) was cancelled at \(Markup.duration(cancelled))"))</title></line>"
            }
            (labelStart, labelEnd, hasBar) = (Self.ms(started), finish, true)
        }
        let label = label(operation.name, t0: labelStart, t1: labelEnd, rowStart: enqueued, center: center, mayBeInside: hasBar)
        body += label.markup
        body += "</g>\n"
        rowSpans.append(RowSpan(operation: operation.id, top: y, bottom: y + height, covered: [x(enqueued)...max(x(labelEnd), x(enqueued) + 2), label.extent]))
        y += height
    }

    /// A part of an operation (one of a BlockOperation's blocks), in a thin row under it.
    private mutating func partRow(_ part: Recording.Part, of operation: Recording.Operation) {
        let height = TimelineStyle.partRowHeight
        let center = y + height / 2
        let t0 = Self.ms(part.started), t1 = Self.ms(part.finished)
        let title = Markup.escape("\(part.name) — part of \(operation.name), ran \(Markup.duration(part.finished - part.started)) from \(Markup.duration(part.started))")
        body += "<g class=\"part\" data-operation=\"\(operation.id)\">"
        body += rect("part-bar", t0: t0, t1: t1, y: center - 5, height: 10, fill: TimelineStyle.colors[operation.outcome.name]!, opacity: 0.7, minimum: 2, title: title)
        let label = label(part.name, t0: t0, t1: t1, rowStart: t0, center: center, mayBeInside: true)
        body += label.markup
        body += "</g>\n"
        rowSpans.append(RowSpan(operation: operation.id, top: y, bottom: y + height, covered: [x(t0)...max(x(t1), x(t0) + 2), label.extent]))
        y += height
    }

    private mutating func groupRow(_ name: String, _ operations: [Recording.Operation]) {
        let height = TimelineStyle.groupRowHeight
        let base = y + height - 3
        var running: [(outcome: String, time: UInt64, change: Int)] = [], waiting: [(UInt64, Int)] = []
        for operation in operations {
            if let started = operation.started, !operation.wasCancelledBeforeStart {
                let outcome = operation.finished == nil ? "unfinished" : operation.outcome.name
                running += [(outcome, started, 1), (outcome, operation.finished ?? recording.duration, -1)]
            }
            let waitEnd = operation.started ?? operation.finished ?? recording.duration
            waiting += [(operation.enqueued, 1), (waitEnd, -1)]
        }
        let runningSteps = Self.steps(running.map { ($0.time, $0.change) }), waitingSteps = Self.steps(waiting)
        let mostRunning = runningSteps.map(\.1).max() ?? 0, mostWaiting = waitingSteps.map(\.1).max() ?? 0
        let counts = Dictionary(grouping: operations, by: \.outcome.name).mapValues(\.count)
        let summary = TimelineStyle.outcomes.compactMap { key in counts[key].map { "\($0) \(key)" } }.joined(separator: ", ")
        let title = Markup.escape("\(name): \(operations.count) operations (\(summary)); at most \(mostRunning) running and \(mostWaiting) waiting at once")
        body += "<g class=\"group\" data-count=\"\(operations.count)\"><title>\(title)</title>"
        body += "<rect x=\"0\" y=\"\(Markup.number(y))\" width=\"100%\" height=\"\(Markup.number(height))\" fill=\"\(Int(y / height) % 2 == 0 ? "#f7f8fa" : "#ffffff")\"/>"
        body += "<text x=\"6\" y=\"\(Markup.number(y + 14))\" font-weight=\"600\">\(Markup.escape(Self.shortened(name, to: 34)))</text>"
        body += "<text x=\"6\" y=\"\(Markup.number(y + 27))\" fill=\"#555\">\(operations.count) ops · \(Markup.escape(Self.shortened(summary, to: 30)))</text>"
        body += "<text x=\"6\" y=\"\(Markup.number(y + 39))\" fill=\"#555\">≤ \(mostRunning) running, ≤ \(mostWaiting) waiting at once</text>"
        // Waiting on top and running below, each on its own scale: a few running
        // operations stay visible beside thousands waiting.
        body += scaled(area(waitingSteps, base: y + 13, room: 10, most: max(mostWaiting, 1), fill: "url(#waiting)", className: "waiting-area"))
        // Running, stacked by how the operations ended (succeeded at the bottom): each
        // outcome's band is as tall as its operations running at the time.
        var stack: [(UInt64, Int)] = [], layers: [(String, [(UInt64, Int)])] = []
        for outcome in TimelineStyle.outcomes {
            let changes = running.filter { $0.outcome == outcome }.map { ($0.time, $0.change) }
            guard !changes.isEmpty else { continue }
            stack += changes
            layers.append((outcome, Self.steps(stack)))
        }
        for (outcome, steps) in layers.reversed() {
            body += scaled(area(steps, base: base, room: height - 20, most: max(mostRunning, 1), fill: TimelineStyle.colors[outcome]!, className: "running-area", outcome: outcome))
        }
        let early = operations.filter(\.wasCancelledBeforeStart)
        if !early.isEmpty {
            var ticks = ""
            for operation in early {
                ticks += "M\(Self.ms(operation.finished ?? operation.enqueued)),\(Markup.number(y + 14)) v4 "
            }
            body += scaled("<path class=\"cancelled-ticks\" d=\"\(ticks)\" stroke=\"\(TimelineStyle.colors["cancelled"]!)\" stroke-width=\"1.5\" vector-effect=\"non-scaling-stroke\"/>")
        }
        body += "</g>\n"
        y += height
    }

    // MARK: Pieces

    private func area(_ steps: [(UInt64, Int)], base: Double, room: Double, most: Int, fill: String, className: String, outcome: String? = nil) -> String {
        guard !steps.isEmpty else { return "" }
        var path = "M0,\(Markup.number(base))"
        for (time, count) in steps {
            path += " H\(Self.ms(time)) V\(Markup.number(base - Double(count) / Double(most) * room))"
        }
        path += " H\(span) V\(Markup.number(base)) Z"
        let outcomeAttribute = outcome.map { " data-outcome=\"\($0)\"" } ?? ""
        return "<path class=\"\(className)\"\(outcomeAttribute) d=\"\(path)\" fill=\"\(fill)\" fill-opacity=\"1\"/>"
    }

    /// A group in time units: the script rescales it with the window.
    private func scaled(_ content: String) -> String {
        "<g class=\"scaled\" transform=\"translate(\(Markup.number(left)) 0) scale(\(plotWidth / span) 1)\">\(content)</g>"
    }

    func rect(_ className: String, t0: Double, t1: Double, y: Double, height: Double, fill: String, opacity: Double = 1, minimum: Double, title: String) -> String {
        let x0 = x(t0), width = max(x(t1) - x0, minimum)
        let opacityAttribute = opacity < 1 ? " fill-opacity=\"\(opacity)\"" : ""
        return "<rect class=\"\(className)\" data-t0=\"\(t0)\" data-t1=\"\(t1)\" data-min=\"\(Markup.number(minimum))\" x=\"\(Markup.number(x0))\" y=\"\(Markup.number(y))\" width=\"\(Markup.number(width))\" height=\"\(Markup.number(height))\" rx=\"2\" fill=\"\(fill)\"\(opacityAttribute)><title>\(title)</title></rect>"
    }

    private func axis(height: Double) -> String {
        var result = "<g class=\"axis\">"
        let step = Self.tickStep(span)
        var tick = 0.0
        while tick <= span + step / 1000 {
            let label = step >= 1000 ? "\(Markup.fixed(tick / 1000, digits: step >= 10_000 ? 0 : 1)) s" : step >= 1 ? "\(Int(tick.rounded())) ms" : "\(Markup.fixed(tick, digits: 2)) ms"
            result += "<line class=\"grid\" data-t0=\"\(tick)\" data-t1=\"\(tick)\" x1=\"\(Markup.number(x(tick)))\" x2=\"\(Markup.number(x(tick)))\" y1=\"\(Markup.number(TimelineStyle.axisHeight - 6))\" y2=\"\(Markup.number(height))\" stroke=\"#e3e3e3\"/>"
            let anchor = tick == 0 ? "start" : x(tick) > left + plotWidth - 30 ? "end" : "middle"
            result += "<text class=\"tick\" data-t0=\"\(tick)\" x=\"\(Markup.number(x(tick)))\" y=\"16\" text-anchor=\"\(anchor)\" fill=\"#555\">\(label)</text>"
            tick += step
        }
        return result + "</g>\n"
    }

    // MARK: Numbers

    /// A round step giving 5 to 10 ticks over `span` milliseconds.
    static func tickStep(_ span: Double) -> Double {
        var magnitude = 1e-3
        while magnitude * 10 <= span { magnitude *= 10 }
        for factor in [0.1, 0.2, 0.5, 1.0] where span / (magnitude * factor) <= 10 { return magnitude * factor }
        return magnitude
    }

    /// The number of `operations` running over time, as (time, count) steps.
    static func runningSteps(_ operations: [Recording.Operation]) -> [(UInt64, Int)] {
        var changes: [(UInt64, Int)] = []
        for operation in operations {
            guard let started = operation.started, !operation.wasCancelledBeforeStart else { continue }
            changes += [(started, 1), (operation.finished ?? started, -1)]
        }
        return steps(changes)
    }

    /// Sums +1/−1 changes into (time, count) steps, one per distinct time.
    static func steps(_ changes: [(UInt64, Int)]) -> [(UInt64, Int)] {
        let sorted = changes.sorted { $0.0 < $1.0 }
        var result: [(UInt64, Int)] = []
        var count = 0
        for (time, change) in sorted {
            count += change
            if let last = result.last, last.0 == time { result[result.count - 1].1 = count } else { result.append((time, count)) }
        }
        return result
    }

    static func shortened(_ text: String, to length: Int) -> String {
        text.count <= length ? text : String(text.prefix(length - 1)) + "…"
    }

    /// The hover text of an operation.
    func details(_ operation: Recording.Operation) -> String {
        var lines = ["\(operation.name) — queue \(operation.queue)"]
        lines.append("added at \(Markup.duration(operation.enqueued))")
        if let waiting = operation.waitingTime { lines.append("waited \(Markup.duration(waiting))") }
        if let running = operation.runningTime { lines.append("ran \(Markup.duration(running))") }
        switch operation.outcome {
        case .succeeded: lines.append("succeeded")
        case .cancelled(let reason):
            lines.append((operation.wasCancelledBeforeStart ? "cancelled before it started" : "cancelled while running") + (reason.map { ": \($0)" } ?? ""))
        case .failed(let error): lines.append("failed: \(error)")
        case .unfinished: lines.append("not finished when the recording stopped")
        }
        if !operation.dependencies.isEmpty {
            lines.append("depends on: " + operation.dependencies.map { recording.operations[$0].name }.joined(separator: ", "))
        }
        return lines.joined(separator: "\n")
    }
}
