"""Reference models in Python PyTorch for checking and benchmarking plait.

gpt2 is nanoGPT's model.py (the parts a dropout-free run uses), llama follows Hugging
Face's modeling_llama arithmetic. Parameter names match plait's, so a plait
init.safetensors loads into them directly.
"""
import torch
import torch.nn as nn
from torch.nn import functional as F


# ---- nanoGPT (model.py), the parts a dropout-free run uses --------------------------
class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=True)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=True)
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        Bx, Tx, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(Bx, Tx, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(Bx, Tx, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(Bx, Tx, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(Bx, Tx, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=True)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=True)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, bias=True)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = LayerNorm(n_embd, bias=True)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)]),
            ln_f=LayerNorm(n_embd, bias=True),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying

    def forward(self, idx):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


# ---- Llama, as Hugging Face's modeling_llama computes it -----------------------------
class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, C, H, KV, theta, block):
        super().__init__()
        self.H, self.KV, self.Q = H, KV, C // H
        self.q_proj = nn.Linear(C, H * self.Q, bias=False)
        self.k_proj = nn.Linear(C, KV * self.Q, bias=False)
        self.v_proj = nn.Linear(C, KV * self.Q, bias=False)
        self.o_proj = nn.Linear(H * self.Q, C, bias=False)
        inv_freq = 1.0 / (theta ** (torch.arange(0, self.Q, 2, dtype=torch.int64).float() / self.Q))
        freqs = torch.outer(torch.arange(block, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()

    def forward(self, x):
        Bx, Tx, _ = x.shape
        q = self.q_proj(x).view(Bx, Tx, self.H, self.Q).transpose(1, 2)
        k = self.k_proj(x).view(Bx, Tx, self.KV, self.Q).transpose(1, 2)
        v = self.v_proj(x).view(Bx, Tx, self.KV, self.Q).transpose(1, 2)
        cos, sin = self.cos[:Tx].to(x.dtype), self.sin[:Tx].to(x.dtype)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.H // self.KV, dim=1)
        v = v.repeat_interleave(self.H // self.KV, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).contiguous().view(Bx, Tx, -1))


class LlamaLayer(nn.Module):
    def __init__(self, C, H, KV, F_, theta, block, eps):
        super().__init__()
        self.input_layernorm = RMSNorm(C, eps)
        self.self_attn = LlamaAttention(C, H, KV, theta, block)
        self.post_attention_layernorm = RMSNorm(C, eps)
        self.mlp = nn.Module()
        self.mlp.gate_proj = nn.Linear(C, F_, bias=False)
        self.mlp.up_proj = nn.Linear(C, F_, bias=False)
        self.mlp.down_proj = nn.Linear(F_, C, bias=False)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        h = self.post_attention_layernorm(x)
        return x + self.mlp.down_proj(F.silu(self.mlp.gate_proj(h)) * self.mlp.up_proj(h))


class Llama(nn.Module):
    def __init__(self, V, block, L, H, KV, C, F_, theta=10000.0, eps=1e-5):
        super().__init__()
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(V, C)
        self.model.layers = nn.ModuleList([LlamaLayer(C, H, KV, F_, theta, block, eps) for _ in range(L)])
        self.model.norm = RMSNorm(C, eps)
        self.lm_head = nn.Linear(C, V, bias=False)

    def forward(self, idx):
        x = self.model.embed_tokens(idx)
        for layer in self.model.layers:
            x = layer(x)
        return self.lm_head(self.model.norm(x))


def nanogpt_adamw(params, lr, weight_decay=0.1, betas=(0.9, 0.95), eps=1e-8):
    """nanoGPT's (and plait's) AdamW: weight decay on 2-D weights only; the single-tensor path."""
    params = list(params)
    return torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                             lr=lr, betas=betas, eps=eps, foreach=False, fused=False)


def eager_tokens_per_s(model, vocab, B, T, steps, device="cpu", autocast_dtype=None):
    """Tokens/s of each PyTorch eager step of `model` on random tokens: forward (under
    autocast when asked), token-mean cross-entropy, backward, clip 1.0, nanoGPT's AdamW,
    then the loss read, as plait's step ends."""
    import contextlib
    import time
    params = list(model.parameters())
    opt = nanogpt_adamw(params, lr=1e-3)
    cast = torch.autocast(device, dtype=autocast_dtype) if autocast_dtype else contextlib.nullcontext()
    rates = []
    for _ in range(steps):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        buf = torch.randint(0, vocab, (B, T + 1), device=device)
        x, y = buf[:, :-1], buf[:, 1:]
        with cast:
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1), reduction="sum") / (B * T)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        rates.append(B * T / (time.perf_counter() - t0))
    return rates
