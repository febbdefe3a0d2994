// SetSequence presets the sequence counter of a znode in a stopped ZooKeeper
// server's data directory: the name ZooKeeper gives the node's next
// EPHEMERAL_SEQUENTIAL or PERSISTENT_SEQUENTIAL child is the parent's
// cversion at the time of the create, which grows by one per child created,
// so a test cannot reach 2^31-1 by creating nodes.
//
// It loads the snapshot and the transaction log the way the server does
// (ZKDatabase over FileTxnSnapLog), raises the node's cversion with the
// server's own DataTree.setCversionPzxid (which keeps the tree's digest
// right), and writes a new snapshot at the last zxid: on restart the server
// loads it and replays nothing after it.
//
// Usage (run as a single source file, no javac step):
//   java -cp zookeeper.jar SetSequence.java <dataDir> <path> <cversion>
import java.io.File;
import org.apache.zookeeper.server.DataNode;
import org.apache.zookeeper.server.DataTree;
import org.apache.zookeeper.server.ZKDatabase;
import org.apache.zookeeper.server.persistence.FileTxnSnapLog;

public class SetSequence {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: SetSequence <dataDir> <path> <cversion>");
            System.exit(2);
        }
        File dir = new File(args[0]);
        String path = args[1];
        int cversion = Integer.parseInt(args[2]);
        FileTxnSnapLog log = new FileTxnSnapLog(dir, dir);
        try {
            ZKDatabase db = new ZKDatabase(log);
            long zxid = db.loadDataBase();
            DataTree dt = db.getDataTree();
            DataNode n = dt.getNode(path);
            if (n == null) {
                System.err.println("SetSequence: no node " + path);
                System.exit(3);
            }
            int was;
            synchronized (n) {
                was = n.stat.getCversion();
            }
            if (cversion < was) {
                System.err.println("SetSequence: " + path + " has cversion " + was + ", above " + cversion);
                System.exit(4);
            }
            dt.setCversionPzxid(path, cversion, zxid);
            log.save(dt, db.getSessionWithTimeOuts(), true);
            System.out.println("SetSequence: " + path + " cversion " + was + " -> " + cversion + " at zxid 0x" + Long.toHexString(zxid));
        } finally {
            log.close();
        }
    }
}
