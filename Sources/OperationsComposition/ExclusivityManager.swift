// Process-wide mutual exclusion by category: the pure state and the storage holding it.

import Operations

/// The holders and waiters of every category, process-wide. A pure state machine: its
/// events return the passes to admit, which the caller admits after the lock.
struct ExclusivityState {
    struct Holding {
        var exclusive = false
        var count = 0
    }

    struct Request {
        var id: UInt64
        /// Sorted by category name, one entry per category (exclusive wins over shared).
        var needs: [(category: String, mode: ExclusivityMode)]
        var grant: GatePass
        /// Made from inside a group (or retry) that holds categories: granted as soon as
        /// its categories are free, not behind the line, whose earlier requests may be
        /// waiting for that very group (which waits for this one).
        var insideHolder = false
    }

    var nextID: UInt64 = 0
    var holdings: [String: Holding] = [:]
    /// Requests not granted yet, by id.
    var waiting: [UInt64: Request] = [:]
    /// The ids of waiting requests in the order they came, from `head` on; ids no longer
    /// in `waiting` (granted, or left) are skipped and dropped from the front, so that
    /// granting the first in line costs O(1), not a shift of the whole line.
    var line: [UInt64] = []
    var head = 0
    /// Granted requests, until released.
    var granted: [UInt64: [(category: String, mode: ExclusivityMode)]] = [:]
    /// How many waiting requests name each category: a grant pass stops once every such
    /// category is blocked, so a long line costs little per release.
    var waitingPerCategory: [String: Int] = [:]
    /// How many waiting requests are `insideHolder`: while any is, a grant pass reads the
    /// whole line.
    var waitingInsideHolders = 0

    /// A request arrives; returns its id and the passes granted now (its own, if it is).
    mutating func request(
        _ needs: [(category: String, mode: ExclusivityMode)], pass: GatePass, insideHolder: Bool = false
    ) -> (UInt64, [GatePass]) {
        nextID += 1
        waiting[nextID] = Request(id: nextID, needs: needs, grant: pass, insideHolder: insideHolder)
        line.append(nextID)
        for need in needs { waitingPerCategory[need.category, default: 0] += 1 }
        if insideHolder { waitingInsideHolders += 1 }
        return (nextID, grant())
    }

    /// A request leaves: granted ones give their categories back, waiting ones leave the
    /// line. Returns the passes granted as a result.
    mutating func release(_ id: UInt64) -> [GatePass] {
        if let needs = granted.removeValue(forKey: id) {
            for (category, _) in needs {
                holdings[category]!.count -= 1
                if holdings[category]!.count == 0 { holdings[category] = nil }
            }
        } else if let request = waiting.removeValue(forKey: id) {
            leaveLine(request)
        } else {
            return []
        }
        return grant()
    }

    /// Grants, in arrival order, every waiting request whose categories are all free for
    /// its mode, all at once. A request that must wait blocks every later one in its
    /// categories (FIFO per category: a waiting writer is not overtaken by later readers).
    private mutating func grant() -> [GatePass] {
        var blocked: Set<String> = []
        var tickets: [GatePass] = []
        var index = head
        while index < line.count, blocked.count < waitingPerCategory.count || waitingInsideHolders > 0 {
            guard let request = waiting[line[index]] else {
                index += 1
                continue
            }
            let grantable = request.needs.allSatisfy { need in
                guard request.insideHolder || !blocked.contains(need.category) else { return false }
                guard let holding = holdings[need.category] else { return true }
                return need.mode == .shared && !holding.exclusive
            }
            index += 1
            guard grantable else {
                for need in request.needs { blocked.insert(need.category) }
                continue
            }
            for need in request.needs {
                var holding = holdings[need.category] ?? Holding()
                holding.exclusive = need.mode == .exclusive
                holding.count += 1
                holdings[need.category] = holding
            }
            granted[request.id] = request.needs
            tickets.append(request.grant)
            waiting[request.id] = nil
            leaveLine(request)
        }
        while head < line.count, waiting[line[head]] == nil { head += 1 }
        if head > 64, head * 2 > line.count {
            line.removeFirst(head)
            head = 0
        }
        return tickets
    }

    private mutating func leaveLine(_ request: Request) {
        if request.insideHolder { waitingInsideHolders -= 1 }
        for need in request.needs {
            let left = waitingPerCategory[need.category, default: 1] - 1
            waitingPerCategory[need.category] = left > 0 ? left : nil
        }
    }
}

/// The one exclusivity state of the process.
enum ExclusivityManager {
    static let state = Locked(ExclusivityState())

    /// Asks for every category in `needs` (keyed by scope: a category inside a group is a
    /// key of its own; sorted); returns the request's id and the passes granted now, to
    /// admit after the lock (its own, if it is granted at once).
    static func request(
        _ needs: [(category: String, mode: ExclusivityMode)], insideHolder: Bool, grant: GatePass
    ) -> (UInt64, [GatePass]) {
        state.withLock { $0.request(needs, pass: grant, insideHolder: insideHolder) }
    }

    /// Gives a request's categories back (or takes it out of the line) and admits the
    /// requests that are granted as a result.
    static func release(_ id: UInt64) {
        let granted = state.withLock { $0.release(id) }
        for grant in granted { grant.admit() }
    }
}
