"""wl::Communicator over torch.distributed (the ranks of one process group), for the C++ rules that
ranks follow together: the agreement after each stage of a tensor-parallel load (_core.agree)."""
from . import _core
from .errors import _from_core


class TorchCommunicator(_core.Communicator):
    """The ranks of torch.distributed's `group` (None: the world) as a wl::Communicator. A collective
    that a rank never joins (it died or hung) fails at the process group's timeout: RankFailed,
    naming `stage` (what the ranks were doing)."""

    def __init__(self, dist, group, stage):
        super().__init__()
        self._dist, self._group, self._stage = dist, group, stage

    def rank(self):
        return self._dist.get_rank(self._group)

    def size(self):
        return self._dist.get_world_size(self._group)

    def all_gather(self, data):
        """Every rank's bytes, in rank order."""
        out = [None] * self.size()
        self._collective(self._dist.all_gather_object, out, data, group=self._group)
        return b"".join(out)

    def broadcast(self, data, root):
        """The bytes of rank `root` (of the group)."""
        box = [data]
        src = root if self._group is None else self._dist.get_global_rank(self._group, root)
        self._collective(self._dist.broadcast_object_list, box, src=src, group=self._group)
        return box[0]

    def barrier(self):
        self._collective(self._dist.barrier, group=self._group)

    def abort(self, why):
        """Leaves the group: the other ranks' pending and later collectives fail at its timeout."""
        self._dist.destroy_process_group(self._group)

    def _collective(self, op, *args, **kwargs):
        try:
            op(*args, **kwargs)
        except RuntimeError as e:  # a peer died or hung past the process group's timeout
            raise _from_core("RankFailed", f"tensor-parallel load, {self._stage}: not every rank answered within the "
                             f"process group's timeout (a rank died or hung): {e}", "", "", False) from e
