extension Recording {
    /// The recording as Chrome trace-event JSON, for Perfetto (ui.perfetto.dev) or
    /// chrome://tracing: a process per queue; its running operations on lanes (packed so that
    /// none overlap on a lane: as many lanes as ran at once), coloured by outcome; waiting
    /// (added → started) as async slices; operations cancelled before they started as
    /// instants on a track of their own; dependencies as flow events (arrows) from the end
    /// of the dependency's slice to the start of the operation that waited for it.
    public func chromeTraceJSON() -> String {
        let lanes = traceLanes()
        var events: [String] = []
        func microseconds(_ nanoseconds: UInt64) -> String { Markup.fixed(Double(nanoseconds) / 1e3, digits: 3) }
        for (index, queue) in queues.enumerated() {
            events.append(#"{"ph":"M","name":"process_name","pid":\#(index + 1),"args":{"name":\#(Markup.json("queue \(queue.name)"))}}"#)
            events.append(#"{"ph":"M","name":"process_sort_index","pid":\#(index + 1),"args":{"sort_index":\#(index)}}"#)
        }
        var namedLanes: Set<[Int]> = []
        let cancelledTrack = 10_000
        for operation in operations {
            let pid = operation.queueIndex + 1, tid = lanes[operation.id] + 1
            let args = #"{"id":\#(operation.id),"outcome":\#(Markup.json(operation.outcome.name)),"dependencies":[\#(operation.dependencies.map(String.init).joined(separator: ","))]}"#
            if let waiting = operation.waitingTime, waiting > 0 {
                let name = Markup.json("waiting: \(operation.name)")
                events.append(#"{"ph":"b","id":\#(operation.id),"name":\#(name),"cat":"waiting","pid":\#(pid),"tid":1,"ts":\#(microseconds(operation.enqueued)),"args":\#(args)}"#)
                events.append(#"{"ph":"e","id":\#(operation.id),"name":\#(name),"cat":"waiting","pid":\#(pid),"tid":1,"ts":\#(microseconds(operation.enqueued + waiting))}"#)
            }
            if let running = operation.runningTime, let started = operation.started {
                if namedLanes.insert([pid, tid]).inserted {
                    events.append(#"{"ph":"M","name":"thread_name","pid":\#(pid),"tid":\#(tid),"args":{"name":"running \#(tid)"}}"#)
                }
                events.append(#"{"ph":"X","name":\#(Markup.json(operation.name)),"cat":\#(Markup.json(operation.outcome.name)),"pid":\#(pid),"tid":\#(tid),"ts":\#(microseconds(started)),"dur":\#(microseconds(max(running, 1))),"cname":\#(Self.traceColor(operation.outcome)),"args":\#(args)}"#)
            } else if operation.wasCancelledBeforeStart {
                if namedLanes.insert([pid, cancelledTrack]).inserted {
                    events.append(#"{"ph":"M","name":"thread_name","pid":\#(pid),"tid":\#(cancelledTrack),"args":{"name":"cancelled before start"}}"#)
                }
                let at = operation.finished ?? operation.cancelled ?? operation.enqueued
                events.append(#"{"ph":"i","s":"t","name":\#(Markup.json("cancelled before start: \(operation.name)")),"cat":"cancelled","pid":\#(pid),"tid":\#(cancelledTrack),"ts":\#(microseconds(at)),"args":\#(args)}"#)
            }
        }
        // A flow per dependency edge between two operations that ran: it leaves the
        // dependency's slice just before its end and arrives at the dependent's slice.
        var flow = 0
        for operation in operations {
            guard operation.runningTime != nil, let arrival = operation.started else { continue }
            for dependency in operation.dependencies {
                let source = operations[dependency]
                guard source.runningTime != nil, let sourceStart = source.started, let sourceEnd = source.finished else { continue }
                flow += 1
                // Inside the source's slice (a flow binds to the slice enclosing its time).
                let leave = sourceEnd > sourceStart ? max(sourceStart, sourceEnd - 1_000) : sourceStart
                events.append(#"{"ph":"s","id":\#(flow),"name":"dependency","cat":"dependency","pid":\#(source.queueIndex + 1),"tid":\#(lanes[source.id] + 1),"ts":\#(microseconds(leave))}"#)
                events.append(#"{"ph":"f","bp":"e","id":\#(flow),"name":"dependency","cat":"dependency","pid":\#(operation.queueIndex + 1),"tid":\#(lanes[operation.id] + 1),"ts":\#(microseconds(arrival))}"#)
            }
        }
        return "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"title\":\(Markup.json(title))},\"traceEvents\":[\n"
            + events.joined(separator: ",\n") + "\n]}\n"
    }

    /// A lane per operation that ran, per queue: the first lane free when it started, so
    /// that running slices on one lane never overlap (lanes: as many as ran at once).
    func traceLanes() -> [Int] {
        var lanes = Array(repeating: 0, count: operations.count)
        var laneEnds: [Int: [UInt64]] = [:]
        for operation in operations.filter({ $0.runningTime != nil }).sorted(by: { $0.started! < $1.started! }) {
            let start = operation.started!, end = operation.finished!
            var ends = laneEnds[operation.queueIndex, default: []]
            if let free = ends.firstIndex(where: { $0 <= start }) {
                ends[free] = end
                lanes[operation.id] = free
            } else {
                ends.append(end)
                lanes[operation.id] = ends.count - 1
            }
            laneEnds[operation.queueIndex] = ends
        }
        return lanes
    }

    static func traceColor(_ outcome: Outcome) -> String {
        switch outcome {
        case .succeeded: "\"good\""
        case .cancelled: "\"bad\""
        case .failed: "\"terrible\""
        case .unfinished: "\"grey\""
        }
    }
}
