"""A Llama in plain torch that runs tensor-parallel over torch.distributed, Megatron style: fused
column-parallel qkv_proj and gate_up_proj, row-parallel o_proj and down_proj (all-reduced),
a vocabulary-parallel embedding (masked lookup, all-reduced) and lm_head (logits all-gathered).
With size=1 and fused=False it is the plain single-process model under Hugging Face's names."""
import torch
import torch.nn.functional as F


class Config:
    def __init__(self, vocab, dim, layers, heads, kv_heads, hidden, eps=1e-5, theta=10000.0):
        self.vocab, self.dim, self.layers, self.heads, self.kv_heads = vocab, dim, layers, heads, kv_heads
        self.hidden, self.eps, self.theta = hidden, eps, theta
        self.head_dim = dim // heads

    @classmethod
    def from_hf(cls, c):
        return cls(c["vocab_size"], c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"],
                   c.get("num_key_value_heads", c["num_attention_heads"]), c["intermediate_size"],
                   c.get("rms_norm_eps", 1e-5), c.get("rope_theta", 10000.0))


def _linear(rows, cols):
    return torch.nn.Linear(cols, rows, bias=False)


def _norm(dim):
    m = torch.nn.Module()
    m.weight = torch.nn.Parameter(torch.full((dim,), float("nan")))
    return m


class TpLlama(torch.nn.Module):
    """Rank `rank` of `size`: every parameter holds that rank's slice only (kv heads replicated
    over ranks when ranks outnumber them, as vLLM does). Parameters start as NaN."""

    def __init__(self, c, rank=0, size=1, fused=True):
        super().__init__()
        self.c, self.rank, self.size, self.fused = c, rank, size, fused
        hd = c.head_dim
        self.heads = c.heads // size
        self.kv_heads = c.kv_heads // size if c.kv_heads >= size else 1
        self.vocab = c.vocab // size
        q, kv, ff = self.heads * hd, self.kv_heads * hd, c.hidden // size
        self.model = torch.nn.Module()
        self.model.embed_tokens = torch.nn.Embedding(self.vocab, c.dim)
        self.model.layers = torch.nn.ModuleList()
        for _ in range(c.layers):
            layer = torch.nn.Module()
            layer.input_layernorm, layer.post_attention_layernorm = _norm(c.dim), _norm(c.dim)
            attn, mlp = torch.nn.Module(), torch.nn.Module()
            if fused:
                attn.qkv_proj = _linear(q + 2 * kv, c.dim)
                mlp.gate_up_proj = _linear(2 * ff, c.dim)
            else:
                attn.q_proj, attn.k_proj, attn.v_proj = _linear(q, c.dim), _linear(kv, c.dim), _linear(kv, c.dim)
                mlp.gate_proj, mlp.up_proj = _linear(ff, c.dim), _linear(ff, c.dim)
            attn.o_proj = _linear(c.dim, q)
            mlp.down_proj = _linear(c.dim, ff)
            layer.self_attn, layer.mlp = attn, mlp
            self.model.layers.append(layer)
        self.model.norm = _norm(c.dim)
        self.lm_head = _linear(self.vocab, c.dim)
        for p in self.parameters():
            p.data.fill_(float("nan"))

    def _all_reduce(self, x):
        if self.size > 1:
            torch.distributed.all_reduce(x)
        return x

    def _rms(self, x, norm):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.c.eps) * norm.weight

    def _rope(self, x):
        n, hd = x.shape[0], x.shape[-1]
        inv = 1.0 / (self.c.theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        freqs = torch.arange(n, dtype=torch.float32)[:, None] * inv
        emb = torch.cat([freqs, freqs], -1)[:, None, :]
        half = torch.cat([-x[..., hd // 2:], x[..., :hd // 2]], -1)
        return x * emb.cos() + half * emb.sin()

    def _attention(self, attn, h):
        n, hd = h.shape[0], self.c.head_dim
        q_rows, kv_rows = self.heads * hd, self.kv_heads * hd
        if self.fused:
            q, k, v = (h @ attn.qkv_proj.weight.T).split([q_rows, kv_rows, kv_rows], -1)
        else:
            q, k, v = h @ attn.q_proj.weight.T, h @ attn.k_proj.weight.T, h @ attn.v_proj.weight.T
        q, k = self._rope(q.view(n, self.heads, hd)), self._rope(k.view(n, self.kv_heads, hd))
        v = v.view(n, self.kv_heads, hd)
        k, v = (t.repeat_interleave(self.heads // self.kv_heads, 1) for t in (k, v))
        scores = torch.einsum("qhd,khd->hqk", q, k) / hd ** 0.5
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        out = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v).reshape(n, q_rows)
        return self._all_reduce(out @ attn.o_proj.weight.T)

    def _mlp(self, mlp, h):
        if self.fused:
            gate, up = (h @ mlp.gate_up_proj.weight.T).chunk(2, -1)
        else:
            gate, up = h @ mlp.gate_proj.weight.T, h @ mlp.up_proj.weight.T
        return self._all_reduce((F.silu(gate) * up) @ mlp.down_proj.weight.T)

    def forward(self, ids):
        """Logits [len(ids), vocab] (the whole vocabulary on every rank)."""
        lo = self.rank * self.vocab
        mine = (ids >= lo) & (ids < lo + self.vocab)
        x = F.embedding((ids - lo).clamp(0, self.vocab - 1), self.model.embed_tokens.weight) * mine[:, None]
        x = self._all_reduce(x)
        for layer in self.model.layers:
            x = x + self._attention(layer.self_attn, self._rms(x, layer.input_layernorm))
            x = x + self._mlp(layer.mlp, self._rms(x, layer.post_attention_layernorm))
        logits = self._rms(x, self.model.norm) @ self.lm_head.weight.T
        if self.size == 1:
            return logits
        parts = [torch.empty_like(logits) for _ in range(self.size)]
        torch.distributed.all_gather(parts, logits.contiguous())
        return torch.cat(parts, -1)
