@testable import Operations
import Testing

/// Which looks of a waiting call run the stall analysis: only those after an interval in
/// which the queue waited on finished nothing.
@Suite("Stall looks: the analysis runs only after a quiet interval")
struct StallLooksTests {
    /// The decisions of the looks at `marks`, in turn, for a wait that began at `began`.
    func decisions(began: UInt64?, looks marks: [UInt64?]) -> [Bool] {
        var looks = StallLooks(beganAt: began)
        return marks.map { looks.analyses(at: $0) }
    }

    @Test("a look after the queue finished an operation skips the analysis; the next quiet one runs it")
    func progressSkipsOneLook() {
        #expect(decisions(began: 10, looks: [11, 11, 15, 16, 16]) == [false, true, false, false, true])
    }

    @Test("the first look analyses when nothing finished since the wait began")
    func quietFromTheStart() {
        #expect(decisions(began: 3, looks: [3]) == [true])
    }

    @Test("with no queue to watch, every look analyses")
    func noQueue() {
        // The last two: a wait whose operation joined a queue after it began; the first look
        // with a count has nothing to compare it with.
        #expect(decisions(began: nil, looks: [nil, nil, 4, 4]) == [true, true, true, true])
    }

    @Test("the count may wrap around")
    func wraps() {
        #expect(decisions(began: .max, looks: [0, 0]) == [false, true])
    }

    @Test("a waiting call reads its queue's count of finishes, which grows as operations finish")
    func callsReadTheirQueue() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let before = StallReport.Call.waitUntilAllOperationsAreFinished(queue).progressMark
        queue.addOperations([BlockOperation {}, BlockOperation {}], waitUntilFinished: true)
        let after = StallReport.Call.waitUntilAllOperationsAreFinished(queue).progressMark
        #expect(before != nil)
        #expect(after.map { $0 &- (before ?? 0) } == 2)
        let lonely = BlockOperation {}
        #expect(StallReport.Call.waitUntilFinished(lonely).progressMark == nil)
        let member = BlockOperation {}
        queue.isSuspended = true
        queue.addOperation(member)
        #expect(StallReport.Call.waitUntilFinished(member).progressMark == after)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
    }
}
