@testable import Operations
import Testing

/// Which looks of a waiting call run the stall analysis: a wait for a queue's operations
/// skips it after an interval in which the queue finished something, except after the
/// longest interval; a wait for one operation never skips it.
@Suite("Stall looks: when a look runs the analysis")
struct StallLooksTests {
    /// The decisions of the looks at `marks` (each after the longest interval or not), in
    /// turn, for a wait that began at `began`.
    func decisions(began: UInt64?, looks marks: [(UInt64?, longest: Bool)]) -> [Bool] {
        var looks = StallLooks(beganAt: began)
        return marks.map { looks.analyses(at: $0.0, afterLongestInterval: $0.longest) }
    }

    @Test("a look after the queue finished an operation skips the analysis; the next quiet one runs it")
    func progressSkipsOneLook() {
        let marks: [(UInt64?, longest: Bool)] = [(11, false), (11, false), (15, false), (16, false), (16, false)]
        #expect(decisions(began: 10, looks: marks) == [false, true, false, false, true])
    }

    @Test("after the longest interval, a look runs the analysis even though the queue finished something")
    func longestIntervalAlwaysAnalyses() {
        let marks: [(UInt64?, longest: Bool)] = [(2, false), (3, true), (4, true), (5, false)]
        #expect(decisions(began: 1, looks: marks) == [false, true, true, false])
    }

    @Test("the first look analyses when nothing finished since the wait began")
    func quietFromTheStart() {
        #expect(decisions(began: 3, looks: [(3, false)]) == [true])
    }

    @Test("with no queue to watch, every look analyses")
    func noQueue() {
        let marks: [(UInt64?, longest: Bool)] = [(nil, false), (nil, false)]
        #expect(decisions(began: nil, looks: marks) == [true, true])
    }

    @Test("the count may wrap around")
    func wraps() {
        let marks: [(UInt64?, longest: Bool)] = [(0, false), (0, false)]
        #expect(decisions(began: .max, looks: marks) == [false, true])
    }

    @Test("a wait for a queue's operations reads the queue's count of finishes; a wait for one operation reads none")
    func callsReadTheirQueue() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let before = StallReport.Call.waitUntilAllOperationsAreFinished(queue).progressMark
        queue.addOperations([BlockOperation {}, BlockOperation {}], waitUntilFinished: true)
        // The batch's wait returns once both finished; their worker may record the second
        // one's departure (what the count counts) just after. The queue's own wait returns
        // once it has.
        queue.waitUntilAllOperationsAreFinished()
        let after = StallReport.Call.waitUntilAllOperationsAreFinished(queue).progressMark
        #expect(before != nil)
        #expect(after.map { $0 &- (before ?? 0) } == 2)
        #expect(StallReport.Call.addOperations(queue).progressMark == after)
        #expect(StallReport.Call.awaitEnqueue(queue).progressMark == after)
        // Other work finishing in its queue says nothing of what one operation waits for.
        let member = BlockOperation {}
        queue.isSuspended = true
        queue.addOperation(member)
        #expect(StallReport.Call.waitUntilFinished(member).progressMark == nil)
        #expect(StallReport.Call.awaitOperation(member).progressMark == nil)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
    }
}
