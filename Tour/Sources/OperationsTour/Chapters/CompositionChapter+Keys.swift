import Operations
import OperationsComposition
import OperationsRecording

extension CompositionChapter {
    /// The list chapter, done with keys: a row's image group is added under the row's key.
    /// A row that leaves the viewport is not cancelled but lowered; one that scrolls back
    /// while its image is in flight joins that work instead of starting it again; only a
    /// row a whole viewport away is cancelled by key.
    func listByKey(
        in context: TourContext, server: ImageServer, recorder: OperationRecorder, result: inout ChapterResult
    ) -> String {
        let viewport = context.settings.viewport
        let queue = OperationQueue()
        queue.name = "list by key"
        queue.maxConcurrentOperationCount = 4
        recorder.record(queue)
        let slowIndex = ImageServer.slowImage
        let slowRequestsBefore = server.requestCount(ofImage: slowIndex)
        // The slow row's image is kept back until the scrolling ends: it is in flight when
        // its row leaves and when it comes back, however loaded the machine.
        let slow = server.hold(image: slowIndex)
        defer { slow.release() }
        var groups: [Int: ImageGroup] = [:]
        var joined = Set<Int>(), lowered = Set<Int>(), cancelled = Set<Int>()

        func show(_ row: Int) {
            if let existing = groups[row], existing.isFinished, !existing.isCancelled { return }
            let operation = queue.addOperation(forKey: row) {
                let group = ImageGroup(index: row, url: server.url(ofImage: row), folder: context.output, prefix: "10-row")
                // Recorded before it joins the queue: its children's starts are all seen.
                recorder.record(group)
                return group
            }
            guard let group = operation as? ImageGroup else { return }
            if groups[row] === group {
                joined.insert(row)
                queue.setQueuePriority(.normal, forKey: row)
            } else {
                groups[row] = group
            }
        }

        // Down one viewport, then back up, one row per tick.
        let tops = Array(0...viewport) + Array((0..<viewport).reversed())
        for top in tops {
            let visible = top..<(top + viewport)
            for row in visible { show(row) }
            for (row, group) in groups where !visible.contains(row) && !group.isFinished {
                if row < top - viewport || row >= top + viewport + viewport / 2 {
                    if queue.cancelOperation(forKey: row) { cancelled.insert(row) }
                } else {
                    queue.setQueuePriority(.veryLow, forKey: row)
                    lowered.insert(row)
                }
            }
            Thread.sleep(forTimeInterval: context.settings.unit / 8)
        }
        slow.release()
        for group in groups.values { group.waitUntilFinished() }
        let slowRequests = server.requestCount(ofImage: slowIndex) - slowRequestsBefore
        result.numbers["list rows started"] = Double(groups.count)
        result.numbers["list rows joined"] = Double(joined.count)
        result.numbers["list slow row joined"] = joined.contains(slowIndex) ? 1 : 0
        result.numbers["list slow row requests"] = Double(slowRequests)
        result.numbers["list rows delivered"] = Double(groups.values.filter(\.delivered).count)
        return "the list by key, scrolled down one viewport and back: \(groups.count) rows started, \(lowered.count) lowered when they left, \(joined.count) joined in flight when they came back (row \(slowIndex), held by the server, among them: \(joined.contains(slowIndex)); its image was requested \(slowRequests) time), \(cancelled.count) cancelled by key"
    }
}
