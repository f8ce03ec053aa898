"""The claims the book checks, by id, and where each one is checked.

What a paper says is written here once (``CLAIMS``: id, citation, statement, prediction,
paraphrased from the papers). Where the book checks it is *found*, never typed:

* **test**: a function ``test_<ID>_…`` (``LN-1`` → ``test_LN_1_…``) in ``tests/test_*.py``, or
  the cases of a test parametrised over the evidence registry (``test_registered_claim_…[LN_1]``);
* **chapter**: a ``book/*.ipynb`` whose prose mentions the id;
* **measurement**: values the chapters glue (``tfx.book.notebook.glue``), pasted into the page
  from the executed chapter, so the page shows the numbers of the last run. A claim's
  ``measured`` template names the chapter and writes glue keys in braces
  (``"slope {ln1_slope:.4f}"``); a chapter can also glue one summary string under
  ``claim-<ID>`` (``glue("claim-TF-1", f"…")``), which the page picks up without an entry
  here.

* **status**: one word of :data:`STATUSES`, which a chapter glues as ``status-<ID>`` with
  :func:`glue_status` (for a training claim, from its effects' verdicts by :func:`status_of`).

``python -m tfx.book.claims_page [book/claims.md]`` writes the book's appendix page
"Claims and how they are checked"; ``tests/test_book.py`` fails when the page, the
registry, the tests and the chapters disagree.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..runs.shipped import checkout_root
from .notebook import glue, glued_names

ROOT = checkout_root()  # the repository (book/, tests/ beside tfx/); None for an installed copy
ID = re.compile(r"\b([A-Z]{2})-(\d+)\b")
_KEY = re.compile(r"\{([\w-]+)(?::([^{}]*))?\}")


@dataclass(frozen=True)
class Claim:
    id: str
    cite: str  # bibtex key(s) in book/references.bib, comma-separated
    where: str  # where in the paper
    statement: str
    prediction: str
    measured: tuple = ()  # (chapter stem, template with {glue_key:format}); () if no chapter measures it
    context: bool = False  # the paper's results quoted for context: nothing to measure or test

    def __post_init__(self):
        if not ID.fullmatch(self.id):
            raise ValueError(f"id={self.id!r} must look like 'LN-1' (two capitals, a dash, a number)")
        if self.measured and len(self.measured) != 2:
            raise ValueError(f"{self.id}: measured must be (chapter stem, template), got {self.measured!r}")
        if self.context and self.measured:
            raise ValueError(f"{self.id}: a context claim is quoted, not measured")


CLAIMS = [
    # Xiong et al. 2020: LayerNorm, hidden norms and gradients at initialisation
    Claim("LN-1", "xiong2020preln,borealis2021training", "Lemma 3 of the first (corrected: see chapter 3), eq. 4 of the second",
          "The Jacobian of LayerNorm (unit gain, zero bias) shrinks as its input grows.",
          "Spectral norm exactly √d/‖x−μ‖ (√d/√(‖x−μ‖² + dε) with ε); slope −1 against ‖x‖ on log-log axes.",
          ("03-layernorm-jacobian", "autograd vs formula within {ln1_max_rel_err:.0e} (relative); "
                                    "log-log slope {ln1_slope:.4f}")),
    Claim("LN-2", "xiong2020preln", "Lemma 1",
          "A ReLU keeps half of a centred Gaussian's second moment.",
          "E‖ReLU(X)‖² = σ²d/2 for X ~ N(0, σ²I_d).",
          ("03-layernorm-jacobian", "Monte Carlo within {ln2_max_rel_err:.2f} % of σ²d/2")),
    Claim("LN-3", "xiong2020preln", "Lemma 2",
          "Hidden-state norms at initialisation in a simplified model (one head, uniform attention, "
          "Xavier-normal weights).",
          r"Post-LN: $\mathbb E\|x_l^{post,5}\|^2 = 1.5\,d$ at every layer; Pre-LN: between $(1 + l/2)\,d$ and "
          r"$(1 + 3l/2)\,d$ after $l$ layers.",
          ("04-gradients-at-init", "Post-LN {ln3_post_simp:.3f}d; Pre-LN grows {ln3_pre_slope_simp:.2f}d per "
                                   "layer, inside the bounds at {ln3_pre_inside:s} layers")),
    Claim("LN-4", "xiong2020preln", "Theorem 1, Fig. 3(c, d)",
          "The gradient of the last FFN weight at initialisation, against depth.",
          "Post-LN: independent of depth (exponent 0; paper ≈ 1.6 at 6–14 layers); Pre-LN: shrinks like 1/√N.",
          ("04-gradients-at-init", "exponents over {ln4_seeds} seeds (95 % interval): Post-LN {ln4_k_post:+.2f} "
                                   "({ln4_k_post_lo:+.2f} to {ln4_k_post_hi:+.2f}), Pre-LN {ln4_k_pre:+.2f} "
                                   "({ln4_k_pre_lo:+.2f} to {ln4_k_pre_hi:+.2f}); the embedding's offset "
                                   "predicts {ln4_k_offset:+.2f} (a criterion revised after this pilot), and on fresh "
                                   "seeds {ln4_fresh_seeds} Pre-LN's exponent is {ln4_fresh_k:+.2f} "
                                   "({ln4_fresh_lo:+.2f} to {ln4_fresh_hi:+.2f})")),
    Claim("LN-5", "xiong2020preln", "Fig. 3(a, b)",
          "Per-layer gradient norms at initialisation.",
          "Post-LN grows toward the output; Pre-LN is about flat.",
          ("04-gradients-at-init", "log-log slope against the layer index (95 % interval): Post-LN "
                                   "{ln5_post_slope:+.2f} ({ln5_post_slope_lo:+.2f} to {ln5_post_slope_hi:+.2f}), "
                                   "Pre-LN {ln5_pre_slope:+.2f} ({ln5_pre_slope_lo:+.2f} to "
                                   "{ln5_pre_slope_hi:+.2f}): Pre-LN falls, it is not flat")),
    # Warmup
    Claim("WU-1", "xiong2020preln", "§3.2, Fig. 2",
          "Post-LN needs learning-rate warmup.",
          "With Adam and no warmup, Post-LN ends far worse than with warmup (paper: 8.45 vs about 34 BLEU on "
          "IWSLT'14); results depend on the warmup length.",
          ("11-warmup-adam", "{claim-WU-1}")),
    Claim("WU-2", "xiong2020preln", "§4",
          "Pre-LN trains without warmup, and faster.",
          "Pre-LN without warmup reaches Post-LN-with-warmup quality in fewer steps (paper: epoch 9 vs 15).",
          ("11-warmup-adam", "{claim-WU-2}")),
    Claim("WU-3", "huang2020tfixup,borealis2021training", "tutorial Fig. 3",
          "Without warmup, Post-LN's input-embedding gradients and Adam's update sizes collapse early.",
          "The median gradient and update magnitudes fall by a large factor within about 100 steps "
          "without warmup, far less with it.",
          ("11-warmup-adam", "{claim-WU-3}")),
    # Liu et al. 2020: gradients are not the culprit
    Claim("GV-1", "liu2020admin", "Theorem 1, Fig. 3",
          "Only Post-LN decoders lose gradient on the way down, at the encoder-attention sub-layers; "
          "Post-LN encoders do not.",
          "Relative gradient norm about constant through a Post-LN encoder, falling through a Post-LN decoder "
          "(the paper's setting is an encoder–decoder; Theorem 1 assumes each branch passes back what it adds).",
          ("05-not-vanishing", "bottom/top gradient: Post-LN encoder {nv_post_enc:.2f} under a decoder, "
                               "{nv_alone_bottom:.2f} alone; decoder {nv_post_dec:.2g}; Pre-LN decoder "
                               "{nv_pre_dec:.2f}")),
    Claim("GV-2", "liu2020admin", "Table 1",
          "Removing the vanishing gradient alone does not stabilise training.",
          "A Post-LN encoder with a Pre-LN decoder still fails where Pre-LN/Pre-LN trains (the paper trains "
          "with warmup).",
          ("12-depth-with-warmup", "{claim-GV-2}")),
    Claim("GV-3", "liu2020admin", "Fig. 5",
          "Attention-parameter gradients are unbalanced; Adam equalises the update sizes, SGD does not.",
          "Gradient norms spread widely; Adam's update norms close together, SGD's as spread as the gradients.",
          ("05-not-vanishing", "RMS per coordinate, checkpoints after {nv_gv3_a} and {nv_gv3_b} steps, spread "
                               "(decades): gradients {nv_spread_adam_grad:.1f}, Adam updates "
                               "{nv_spread_adam_update:.2f}, SGD updates {nv_spread_sgd_update:.1f} (gradients "
                               "{nv_spread_sgd_grad:.1f})")),
    # Liu et al. 2020: amplification and Admin
    Claim("AM-1", "liu2020admin", "§4.1, Fig. 7",
          r"The layer dependency $\beta_{i,j}$: how much sub-layer $i$'s output is made of branch $j$.",
          "At initialisation Pre-LN spreads it evenly (about 1/√i per row); Post-LN concentrates it on the "
          "latest branches.",
          ("06-amplification", "Pre-LN last row over the branches: coefficient of variation {am_pre_row_cv:.2f}, "
                               "mean {am_pre_row_mean:.2f}, the embedding {am_pre_emb:.2f}; share of the last two "
                               "branches: Post-LN {am_post_last_two:.2f}, Pre-LN {am_pre_last_two:.2f}; "
                               "decomposition residual ≤ {am_resid_post:.2f} (Post-LN)")),
    Claim("AM-2", "liu2020admin", "Theorem 2, Corollaries 1–2, Fig. 4",
          "How much a small parameter change moves the output.",
          "Post-LN: O(N); Pre-LN: O(log N) (paper: R² = 0.99 for random noise, 0.75 for Adam updates).",
          ("06-amplification", "random noise, log-log exponents (95 % interval): Post-LN "
                               "{am_k_random_post_exponent:.2f} ({am_k_random_post_low:.2f} to "
                               "{am_k_random_post_high:.2f}; O(N): 1), Pre-LN {am_k_random_pre_exponent:.2f} "
                               "({am_k_random_pre_low:.2f} to {am_k_random_pre_high:.2f}; O(log N): "
                               "{am_k_harmonic:.2f}); output change against Σβ²_ii, one line for both: R² "
                               "{am_thm2_r2:.2f}; one Adam step: Post-LN/Pre-LN = {am_ratio_adam:.0f} at the "
                               "largest depth")),
    Claim("AD-1", "liu2020admin", "§4.3",
          r"Admin: $x_i = \mathrm{LN}(x_{i-1} \odot \omega_i + f_i(x_{i-1}))$, with $\omega_i$ set by one profiling pass.",
          r"$\beta_{i,i}^2 \approx 1/i$ at initialisation (the embedding numbered 1; $1/(i+1)$ in the book's "
          r"numbering), and an output change that grows like Pre-LN's.",
          ("07-admin", "on a held-out batch, log-log slope of β²_ii against i+1 {ad_slope_admin:.2f} (law: −1), "
                       "level {ad_gm:.2f} (law: 1); output-change exponent Admin {ad_exp_admin:.2f}, Pre-LN "
                       "{ad_exp_pre:.2f}, Post-LN {ad_exp_post:.2f}; Admin/Pre-LN "
                       "{ad_admin_over_pre_random:.2f} at the largest depth")),
    Claim("AD-2", "liu2020admin", "§4.3",
          "After training, Admin folds into a plain Post-LN model.",
          "Folding ω into the weights leaves the function unchanged.",
          ("07-admin", "largest logit difference after folding {ad2_max_diff:.1e}")),
    Claim("AD-3", "liu2020admin", "Table 2, Figs. 1, 9, 10",
          "With warmup, deep Post-LN fails; Pre-LN trains; Admin is stable and ends better than Pre-LN.",
          "WMT'14 En-De 6/12/18 layers: Post-LN 27.80/failed/failed, Pre-LN 27.27/28.26/28.38, "
          "Admin 27.90/28.58/29.03 BLEU (with warmup); without warmup (IWSLT'14, lr × β2) Post-LN diverges "
          "in 7 of 15 settings, Pre-LN and Admin in none.",
          ("12-depth-with-warmup", "{claim-AD-3}")),
    # Huang et al. 2020: T-Fixup
    Claim("TF-1", "huang2020tfixup", "T-Fixup condition",
          "The T-Fixup condition for attention blocks.",
          "‖v‖²‖w‖² + ‖w‖²‖m‖² + ‖v‖²‖m‖² = Θ(1/L) for the T-Fixup-initialised model.",
          ("08-t-fixup", "{claim-TF-1}; with m the measured value input, the left side's slopes "
                         "{tf_input_slope_encoder:.2f} / {tf_input_slope_decoder:.2f}")),
    Claim("TF-2", "huang2020tfixup,borealis2021training", "initialisation rules",
          "T-Fixup: Xavier weights, scaled value, output and FFN weights and embeddings; no LayerNorm, "
          "no warmup.",
          "Every scale factor as stated; trains without LayerNorm and warmup where plain no-LN diverges.",
          ("08-t-fixup", "{claim-TF-2}")),
    Claim("TF-3", "huang2020tfixup", "Tables 1–3",
          "Quoted results of T-Fixup.",
          "IWSLT'14 De-En small: 35.5 vs 34.2 BLEU; WMT'14 En-De with 30 layers: 30.1 BLEU.", context=True),
    # Xu et al. 2020: Lipschitz-constrained initialisation
    Claim("LP-1", "xu2020lipschitz", "Table 2",
          "Computation order v1 (LayerNorm after the residual sum) scales the carried residual by w/σ.",
          "The residual shrinks wherever w/σ < 1.",
          ("09-lipschitz-init", "Xavier, at initialisation: mean w/σ {lp_ratio_mean_xavier_encoder:.2f} in the "
                                "encoder; share of the embedding carried to its top {lp_carried_xavier_encoder:.1e} "
                                "(Lipschitz initialisation: {lp_carried_lipschitz_encoder:.2f})")),
    Claim("LP-2", "xu2020lipschitz", "§3, eqs. 2–6",
          "A variable confined to [a, b] has a standard deviation below b − a.",
          "σ < b − a for any density, so b − a ≤ 1 gives σ ≤ 1.",
          ("09-lipschitz-init", "derivation check: {lp2_violations} violations; largest σ/(b − a) "
                                "{lp2_worst:.4f} over the Monte Carlo distributions, {lp2_rand_max:.4f} over "
                                "{lp2_rand_n} random discrete ones (the tight bound is 1/2)")),
    Claim("LP-3", "xu2020lipschitz", "§4",
          "Lipschitz-constrained initialisation keeps deep v1 models trainable.",
          "The std of the residual sum stays ≤ 1 at every v1 layer at initialisation; deep v1 models train "
          "(paper: 24 layers, 29.46 BLEU En-De).",
          ("09-lipschitz-init", "at init, σ ≤ 1 at {lp_n_le1_lipschitz_encoder} of {lp_n_sub_encoder} "
                                "encoder sub-layers (mean σ {lp_sigma_mean_lipschitz_encoder:.3f}); training: "
                                "{claim-LP-3}")),
    # Beyond the seed papers
    Claim("RZ-1", "bachlechner2021rezero,liu2020admin", "ReZero; Liu et al. §5.3",
          "ReZero: x + α·f(x) with α = 0 at initialisation and no LayerNorm.",
          "The network is the identity at initialisation; Liu et al. saw it cost 1–2 BLEU on IWSLT'14 and "
          "diverge in fp16.",
          ("10-rezero-deepnorm", "identity at init (a derivation check: it follows from α = 0): largest "
                                 "|F(x₀) − x₀| {rz_gap_enc} (encoder), {rz_gap_dec} (decoder); trained: "
                                 "{claim-RZ-1}; the BLEU cost and fp16 divergence are not testable on a CPU")),
    Claim("DN-1", "wang2022deepnet", "DeepNorm",
          "DeepNorm: x ← LN(αx + f(x)) with α and a down-scaling of some initial weights set from the depth.",
          "The model update after one step is bounded independently of depth, and deep Post-LN-style models "
          "train stably with these constants.",
          ("10-rezero-deepnorm", "{claim-DN-1}; at initialisation, N = {dg_depth}: one Adam step moves "
                                 "Post-LN's output {dg_post_over_dn:.0f}× as much as DeepNorm's")),
    # After 2020 (the book's own extension): the seeds' story on a decoder-only LM
    Claim("LM-1", "xiong2020preln,liu2020admin", "the book's extension to a decoder-only LM",
          "The seeds' story holds in a decoder-only language model: Post-LN needs warmup where Pre-LN "
          "does not, and the layer dependency and the output change follow the encoder's laws.",
          "On English text, Post-LN without warmup fails or ends worse than with it where Pre-LN trains "
          "without; at init Σβ²_ii and the output change grow like N for Post-LN and like ln N for Pre-LN.",
          ("14-decoder-only-lm", "at init, the output change {lm1-init-law} (R² {lm1-r2-post:.2f} "
                                 "against N for Post-LN; Pre-LN {lm1-r2-pre:.2f} against ln N, "
                                 "{lm1-r2-pre-n:.2f} against N); trained: {claim-LM-1}")),
    # After 2020 (the book's own extension): init-time halves; the training halves come with
    # the recorded learning-rate sweep
    Claim("RN-1", "zhang2019rmsnorm", "RMSNorm (re-scaling without re-centring)",
          "RMSNorm divides by the root mean square of its input, without LayerNorm's centring; "
          "its Jacobian is LayerNorm's with the centring removed.",
          "With unit gain and ε = 0 the Jacobian is (√d/‖x‖)(I − x̂x̂ᵀ), so its spectral norm is √d/‖x‖ "
          "(LN-1 with ‖x‖ for ‖x−μ‖); it trains like LayerNorm at this scale.",
          ("17-rmsnorm-dyt", "autograd vs formula within {rn1_max_rel_err:.0e} (relative); "
                              "log-log slope {rn1_slope:.4f}; trained (LM, {nt-rates} learning rates): "
                              "{claim-RN-1}")),
    Claim("DY-1", "zhu2025dyt", "Dynamic Tanh",
          "Dynamic Tanh, γ ⊙ tanh(αx) + b with a learned scalar α, can stand in for every norm.",
          "Its Jacobian is diag(γα(1 − tanh²(αx))), bounded by |α|·max|γ| whatever ‖x‖; too large an α "
          "saturates most units at initialisation; with α set right it trains like LayerNorm.",
          ("17-rmsnorm-dyt", "Jacobian within {dy1_jac_rel_err:.0e} of the formula; in a "
                              "{dy1_depth}-layer Pre-LN LM at init {dy1_share_default:.2f} % of units "
                              "saturate at α = 0.5, half from α ≈ {dy1_alpha_half:.2g}, "
                              "{dy1_share_max:.0f} % at α = {dy1_alpha_max:.0f}; trained at α = 0.5 (LM, "
                              "{nt-rates} learning rates): {dy1-train}; started at smaller α: {dy1-alpha}")),
    Claim("PL-1", "kim2025periln,sun2025curse,olmo2025", "Peri-LN; The Curse of Depth; OLMo 2",
          "Pre-LN's residual stream grows with depth, so deep layers add little; a norm on each "
          "branch's output or a 1/√ℓ factor on the norm of layer ℓ is said to bound the growth.",
          "Pre-LN's stream variance grows with the layer, at initialisation and more after training; "
          "Peri-LN and the output norm bound it, and 1/√ℓ slows it.",
          ("16-norms-after-2020", "at init, {pl1_depth} layers: the stream's mean square grows "
                                  "{pl1_slope_pre:.2f} per layer in Pre-LN, {pl1_slope_peri:.2f} in "
                                  "Peri-LN, {pl1_slope_out:.2f} with the output norm (they "
                                  "{pl1_outnorms_verdict} at init); with 1/√ℓ it ends at "
                                  "{pl1_scaled_over_pre:.2f}× Pre-LN's, growing like ln ℓ; {pl1-train}")),
    # After 2020: logits that grow (Wortsman et al. 2023's small-scale proxies)
    Claim("LG-1", "wortsman2023proxies,dehghani2023vit22b", "§3.1.1, Fig. 2",
          "Without a fix, the largest attention logit grows during training at high learning rates, "
          "until attention is nearly one-hot and training fails.",
          "At high learning rates the largest attention logit grows by orders of magnitude without QK-norm "
          "and the loss stalls or diverges; with QK-norm it stays bounded and the run trains.",
          ("15-logits-that-grow", "{claim-LG-1}")),
    Claim("LG-2", "wortsman2023proxies", "§3.1.1, Fig. 1",
          "QK-norm makes the final loss less sensitive to the learning rate.",
          "The curve of final loss against the learning rate is flatter with QK-norm: a lower LR sensitivity.",
          ("15-logits-that-grow", "{claim-LG-2}")),
    Claim("ZL-1", "wortsman2023proxies,chowdhery2022palm", "§3.1.2, Fig. 3",
          "Nothing in the cross-entropy holds the output's log Z; it can drift far from 0, and a z-loss "
          "holds it.",
          "Without z-loss, log Z of the output softmax drifts far from 0 at high learning rates; a z-loss "
          "1e-4·(log Z)² keeps it near 0 at no cost in loss.",
          ("15-logits-that-grow", "{claim-ZL-1}")),
    Claim("EC-1", "zhai2023sigmareparam", "§3, Fig. 1",
          "Attention entropy collapse goes with unstable training.",
          "Runs that fail show their lowest per-head attention entropy collapsing, before their loss tells "
          "them apart from runs that train.",
          ("15-logits-that-grow", "{status-EC-1}: {ec-why}; measured: no fix, {ec-outcomes} "
                                  "({ec-seeds} seeds); runs still learning above the best rate "
                                  "({ec-slow}) against those that learned ({ec-learned}), at "
                                  "{ec-rate-ratio}× their rates: lowest head entropy apart from "
                                  "step {ec-ent-step}, held-out loss (evaluated {ec-eval-every} "
                                  "steps apart, entropy {ec-ent-every}) from step {ec-loss-step}")),
    # The optimiser's share (chapters 18, 19 and 20)
    Claim("OP-1", "bai2025adamspikes", "the 1-D quadratic; the stages of a spike",
          "Adam's preconditioner can trigger a loss spike by itself: once the gradient is far below what "
          "the second moment v remembers, v decays by β2 a step and the effective step grows.",
          "On a 1-D quadratic of constant curvature, GD at a stable rate converges while Adam spikes; the "
          "spike comes when the preconditioned curvature passes the (momentum) stability threshold. In a "
          "language model, update-norm spikes come before loss spikes.",
          ("18-adam-spikes", "quadratic: GD {op1-gd-falls}; Adam's loss turns at step {op1-onset}, "
                             "predicted {op1-predicted}; {op1-grid-agree} of {op1-grid-runs} β2 × ε "
                             "settings agree with the prediction; the language model "
                             "(experiments/op-warmup-decay.toml): {sp-total} loss spikes in {sp-seeds-with} "
                             "of {sp-seeds} seeds, the update norm before them against its average "
                             "{sp-effect}")),
    Claim("OP-2", "wortsman2023proxies,everett2024scaling", "§3.4 and App. C of the first; Adam-atan2 in the second",
          "Adam's ε matters when the gradient RMS comes close to it: updates collapse.",
          "A smaller ε, or Adam-atan2 (no ε), removes the collapse.",
          ("18-adam-spikes", "the LM's gradient RMS stays ≥ {op2-rms-min:.1e}, {op2-orders:.1f} orders "
                             "above ε = 1e-8; raised to ε = 1e-3 (emulation, one seed) the update norm "
                             "falls to {op2-upd-ratio:.2f} of the small-ε run's")),
    Claim("OP-3", "yang2022tp5", "μTransfer; the coordinate check",
          "Under μP the best learning rate stays fixed as the model widens; under the standard "
          "parameterisation it shifts.",
          "Activations stay the same size across widths after a few Adam steps under μP and grow under "
          "the standard parameterisation (the coordinate check); the best rate per width is flat under μP.",
          ("19-mup-transfer", "coordinate check (a derivation check of the implementation, {op3-seeds} "
                              "seeds, widths {op3-widths}): μP {op3-mup-verdict}, standard "
                              "{op3-std-verdict}; {claim-OP-3}")),
    Claim("OP-4", "wortsman2023proxies", "§3.2.3, §3.2.4",
          "μP alone does not lower the sensitivity of the final loss to the learning rate; adding depth "
          "raises that sensitivity faster than adding width.",
          "LR sensitivity under μP ≈ under the standard parameterisation; it grows more with depth than "
          "with width.",
          ("19-mup-transfer", "{claim-OP-4}")),
    Claim("OP-5", "wortsman2023proxies", "§3.2.1",
          "A longer warmup makes the final loss less sensitive to the learning rate.",
          "LR sensitivity falls as the warmup grows longer.",
          ("20-warmup-decay", "{claim-OP-5}")),
    Claim("OP-6", "wortsman2023proxies", "§3.2.2, §3.1.2",
          "Weight decay independent of the learning rate lowers the sensitivity to it; without weight "
          "decay the output logits drift.",
          "LR sensitivity around the best rate is lower with independent than with coupled decay; log Z "
          "ends further below where it started without weight decay.",
          ("20-warmup-decay", "{claim-OP-6}")),
    # the part "When a run breaks" (chapters 21–23)
    Claim("SZ-1", "olmo2025", "§3 (repeated n-grams)",
          "A bad batch (a document of repeated n-grams) causes a loss spike by itself.",
          "A batch of repeated n-grams injected into a healthy run raises its loss over the steps that "
          "follow, against the same run left alone; more at a higher rate.",
          ("21-when-a-run-breaks", "{claim-SZ-1}")),
    Claim("SZ-2", "tuning-playbook,kumar2025zclip", "the Playbook's clipping advice; ZClip §3; OLMo-core's skip-step",
          "Clipping the gradient norm just above its usual size, an adaptive z-score clip and a skip-step "
          "on a z-score each rescue a run from a spike; clipping more than half of the steps means the rate "
          "is too high.",
          "Against no intervention, each lowers the loss a spike costs (what the spike costs the guarded "
          "run, against the same guarded run without it).",
          ("21-when-a-run-breaks", "{claim-SZ-2}")),
    Claim("SZ-3", "olmo2025", "practitioners' reports of resumes (the book's 'When a run breaks' sources)",
          "Resuming a run without its optimiser state spikes the loss.",
          "A resume with fresh Adam moments at the same rate raises the loss over the steps that follow, "
          "against the same run resumed with its state (which is the run left alone: a resume is exact).",
          ("21-when-a-run-breaks", "{claim-SZ-3}")),
    Claim("SC-1", "hagele2024wsd,bergsma2025d2z", "Hägele et al. §3–4 (cooldown shape §4.1); Bergsma et al. §4",
          "A constant rate with a short cooldown (warmup–stable–decay) matches a cosine schedule at equal "
          "tokens, a (1 − √) cooldown beating a linear one; decaying linearly to zero beats cosine to 10 %, "
          "the more so the more tokens per parameter.",
          "Each schedule at its own best rate, at two run lengths: WSD with a (1 − √) cooldown ends within "
          "0.05 nats of cosine; its (1 − √) cooldown ends lower than a linear one; linear decay to zero ends "
          "lower than cosine to 10 %, by more in the longer run.",
          ("21-when-a-run-breaks", "{claim-SC-1}")),
    Claim("SC-2", "kalra2024warmup", "§1, §4",
          "Warmup's benefit is that the network tolerates a larger target learning rate.",
          "The best final loss with warmup is reached at a higher rate than without; at the rate that is "
          "best without warmup, warmup changes little.",
          ("22-what-warmup-buys", "{claim-SC-2}")),
    Claim("OP-7", "jordan2024muon,liu2025muon,kimi2025k2", "Muon; §2 of Liu et al.; QK-clip in Kimi K2",
          "Muon (orthogonalised momentum for the hidden matrices, its update RMS matched to AdamW's) "
          "trains faster than AdamW; with Muon the largest attention logits grow, and QK-clip bounds them.",
          "A finding at this scale either way: Muon's LR curve and best loss against AdamW's; the largest "
          "attention logit with and without QK-clip.",
          ("23-muon", "{claim-OP-7}")),
]
# A claim's name in a few words: the title of its folded Evidence box in the chapters, where the
# open page names claims in words, not ids (claims_page.evidence_page)
TITLES = {
    "LN-1": "LayerNorm's Jacobian shrinks as its input grows",
    "LN-2": "A ReLU keeps half the second moment",
    "LN-3": "Hidden-state norms at initialisation",
    "LN-4": "The last FFN weight's gradient against depth",
    "LN-5": "Every layer's gradient at initialisation",
    "WU-1": "Post-LN needs warmup",
    "WU-2": "Pre-LN trains without warmup, and faster",
    "WU-3": "Without warmup, Post-LN's early updates collapse",
    "GV-1": "Only Post-LN decoders lose gradient",
    "GV-2": "Removing the vanishing gradient does not stabilise training",
    "GV-3": "Adam evens out unbalanced gradients",
    "AM-1": "The layer dependency",
    "AM-2": "How far a small change moves the output",
    "AD-1": "Admin's ω from one profiling pass",
    "AD-2": "Admin folds into a plain Post-LN",
    "AD-3": "Deep Post-LN fails; Admin trains and ends better",
    "TF-1": "T-Fixup's condition",
    "TF-2": "T-Fixup trains without LayerNorm or warmup",
    "TF-3": "T-Fixup's reported results",
    "LP-1": "The paper's order scales the residual by w/σ",
    "LP-2": "The spread of a bounded variable",
    "LP-3": "Lipschitz initialisation keeps deep models trainable",
    "RZ-1": "ReZero",
    "DN-1": "DeepNorm",
    "LM-1": "The seeds' story in a language model",
    "RN-1": "RMSNorm's Jacobian",
    "DY-1": "Dynamic Tanh in place of every norm",
    "PL-1": "Bounding Pre-LN's growing stream",
    "LG-1": "Attention logits grow at high rates",
    "LG-2": "QK-norm and the rate's sensitivity",
    "ZL-1": "The output's log Z, and the z-loss",
    "EC-1": "Entropy collapse and unstable training",
    "OP-1": "Adam spikes by itself",
    "OP-2": "Adam's ε against small gradients",
    "OP-3": "μP keeps the best rate across widths",
    "OP-4": "μP, depth and the rate's sensitivity",
    "OP-5": "A longer warmup and the rate's sensitivity",
    "OP-6": "Independent weight decay and the rate's sensitivity",
    "SZ-1": "A bad batch spikes the loss",
    "SZ-2": "What rescues a run from a spike",
    "SZ-3": "A resume without the optimiser's state",
    "SC-1": "Schedules after cosine",
    "SC-2": "Warmup buys a larger rate",
    "OP-7": "Muon against AdamW",
}
BY_ID = {c.id: c for c in CLAIMS}

# A claim's status, from one vocabulary (book/method.md, "A claim's status"). A status never
# hides a part: every comparison's verdict counts.
STATUSES = (
    "reproduces",                  # every comparison (part) reproduces
    "mixed",                       # some reproduce, some are reversed: the page names which
    "reproduces in part",          # some reproduce, none reversed, the rest not resolved
    "not resolved at this scale",  # none resolved either way
    "does not reproduce",          # some reversed, none reproduce
    "not testable at this scale",  # the setting cannot show it (said with the measurement that shows why)
    "derivation verified",         # a check true by construction (an identity): never evidence
)
NOT_TESTABLE = STATUSES[5]
DERIVATION = STATUSES[6]

# The status a chapter glues for each claim it judges in its own cells (a live run: the theory
# checks, or an init-time half beside the recorded comparisons), declared once here and pinned by
# tests/test_claims.py against the chapters' saved outputs. Every other claim's page status is
# the evidence registry's (tfx.book.evidence.EXPECTED_STATUS).
PAGE_STATUS = {
    "LN-1": DERIVATION, "LN-2": DERIVATION, "LN-3": DERIVATION, "LN-4": "reproduces", "LN-5": "mixed",
    "GV-1": "mixed", "GV-3": "reproduces", "AM-1": "mixed", "AM-2": "mixed",
    "AD-1": "mixed", "AD-2": DERIVATION, "TF-1": "does not reproduce",
    "LP-1": "reproduces", "LP-2": DERIVATION, "WU-3": "reproduces",
    "LM-1": "mixed",  # the init half (its depth-law fit) reversed beside the registry's training half
    "DY-1": "mixed",  # the init half (saturation) beside the registry's training half
    "EC-1": NOT_TESTABLE, "OP-1": "reproduces in part", "OP-2": NOT_TESTABLE,
}


def status_of(verdicts) -> str:
    """A claim's status from the verdicts of the comparisons that test it
    (:data:`tfx.runs.effects.VERDICTS`), hiding none of them:

    ============================  ==========================================================
    reproduces                    every verdict is *reproduces*
    mixed                         some *reproduce* and some are *reversed*
    reproduces in part            some *reproduce*, none *reversed*, the rest *not resolved*
    not resolved at this scale    every verdict is *not resolved at this scale*
    does not reproduce            some are *reversed* and none *reproduces*
    not testable at this scale    every comparison is *not testable at this scale* (a
                                  converged-quality comparison whose runs are still falling)
    ============================  ==========================================================

    Among judged comparisons, one *not testable at this scale* counts as not resolved: it keeps
    a claim from *reproduces* (a half the scale cannot show is not shown to hold).
    """
    from ..runs.effects import VERDICTS

    verdicts = list(verdicts)
    unknown = [v for v in verdicts if v not in VERDICTS + (NOT_TESTABLE,)]
    if not verdicts or unknown:
        raise ValueError(f"verdicts={verdicts!r} must be a non-empty list of {VERDICTS + (NOT_TESTABLE,)}")
    if all(v == NOT_TESTABLE for v in verdicts):
        return NOT_TESTABLE
    hits, reversed_ = verdicts.count(VERDICTS[0]), verdicts.count(VERDICTS[1])
    if hits == len(verdicts):
        return "reproduces"
    if hits and reversed_:
        return "mixed"
    if hits:
        return "reproduces in part"
    if reversed_:
        return "does not reproduce"
    return "not resolved at this scale"


def part_verdict(value) -> str:
    """A part's verdict: a word of :data:`tfx.runs.effects.VERDICTS` as it is, or a pre-set
    criterion's outcome, ``True`` → *reproduces*, ``False`` → *reversed* (the prediction
    failed its own test: the part does not hold)."""
    from ..runs.effects import VERDICTS

    if isinstance(value, str):
        if value not in VERDICTS + (NOT_TESTABLE,):
            raise ValueError(f"a part's verdict {value!r} must be True, False or one of {VERDICTS + (NOT_TESTABLE,)}")
        return value
    return VERDICTS[0] if bool(value) else VERDICTS[1]


def status_of_parts(parts) -> str:
    """The status from each part of a claim: ``True``/``False`` (a pre-set criterion held or
    failed) or a verdict word (:func:`part_verdict`); at least one. The one rule, :func:`status_of`,
    that a training claim's verdicts and a theory claim's checks (:mod:`tfx.book.checks`) both
    go through."""
    parts = list(parts)
    if not parts:
        raise ValueError("a claim needs at least one part to judge")
    return status_of(part_verdict(v) for v in parts)


def _halves(items) -> dict:
    """``{half: [(says, verdict), …]}`` of ``(half, says, verdict)`` items, halves in first-seen order."""
    halves: dict = {}
    for half, says, verdict in items:
        halves.setdefault(half, []).append((says, part_verdict(verdict)))
    return halves


def part_statuses(items) -> dict:
    """``{half: status}``: each half of ``items`` (as :func:`parts_line` takes them) judged on its
    own by :func:`status_of`, the statuses :func:`parts_line` writes."""
    return {half: status_of(v for _, v in rows) for half, rows in _halves(items).items()}


# The item a claim's 'failure' half gets where every failure comparison read *behind at this
# budget* (tfx.book.evidence.part_items): its own words stand for the half's counts.
UNSHOWN_FAILURE = "not shown: in every failure comparison some runs were still improving at the end"


def parts_line(items) -> str:
    """The line that names every part of a claim: ``items`` are ``(half, says, verdict)``
    (``half`` '' where the paper makes one statement). Halves are judged separately, each by
    :func:`status_of`, and every reversed or unresolved comparison is named:

        'failure: reproduces (9 of 9 reproduce) · quality: does not reproduce (0 of 2 reproduce,
         1 not resolved; reversed: on De→En translation …)'
    """
    from ..runs.effects import VERDICTS

    out = []
    for half, rows in _halves(items).items():
        verdicts = [v for _, v in rows]
        word = status_of(verdicts)
        if [says for says, _ in rows] == [UNSHOWN_FAILURE]:
            out.append(f"{half}: {word} ({UNSHOWN_FAILURE})")
            continue
        detail = f"{verdicts.count(VERDICTS[0])} of {len(rows)} reproduce"
        if verdicts.count(VERDICTS[2]):
            detail += f", {verdicts.count(VERDICTS[2])} not resolved"
        if verdicts.count(NOT_TESTABLE):
            detail += f", {verdicts.count(NOT_TESTABLE)} not testable (runs still falling)"
        reversed_ = [says for says, v in rows if v == VERDICTS[1]]
        if reversed_:
            detail += f"; reversed: {'; '.join(reversed_)}"
        out.append(f"{half + ': ' if half else ''}{word} ({detail})")
    return " · ".join(out)


def glue_status(claim_id: str, status: str) -> str:
    """Glue ``status-<ID>`` for the claims page (a word of :data:`STATUSES`); returns it."""
    if claim_id not in BY_ID:
        raise ValueError(f"claim_id={claim_id!r} is not a claim of tfx/book/claims.py (known: {', '.join(BY_ID)})")
    if status not in STATUSES:
        raise ValueError(f"status={status!r} for {claim_id} must be one of {STATUSES}")
    return glue(f"status-{claim_id}", status)


def glue_parts(claim_id: str, items) -> str:
    """Glue ``parts-<ID>`` (:func:`parts_line` of ``items``) and ``status-<ID>`` (every part's
    verdict through :func:`status_of`); returns the status."""
    items = list(items)
    glue(f"parts-{claim_id}", parts_line(items))
    return glue_status(claim_id, status_of(part_verdict(v) for _, _, v in items))


def _sources(nb_path: Path, kinds=("markdown", "code")) -> list[str]:
    cells = json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] in kinds]


def chapters(root: Path = ROOT) -> list[Path]:
    return sorted((root / "book").glob("[0-9]*.ipynb"))


def ids_in_chapters(root: Path = ROOT, kinds=("markdown",)) -> dict:
    """{claim id: [chapter stem, …]} for every id the chapters' cells of ``kinds`` mention."""
    found: dict = {}
    for nb in chapters(root):
        for a, n in sorted({m for src in _sources(nb, kinds) for m in ID.findall(src)}):
            found.setdefault(f"{a}-{n}", []).append(nb.stem)
    return found


def glued_keys(nb_path: Path) -> set:
    """Names the notebook's saved outputs glue (myst-nb stores them as metadata.scrapbook.name)."""
    cells = json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
    return glued_names(o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", []))


def glued_text(nb_path: Path, name: str) -> str | None:
    """The value a notebook's saved outputs glued under ``name``, as text (None if none)."""
    import ast

    cells = json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
    for c in cells:
        for o in c.get("outputs", []) if c["cell_type"] == "code" else ():
            book = (o.get("metadata") or {}).get("scrapbook", {})
            if book.get("name") == name:  # saved under the scrapbook's mime prefix, if any
                text = "".join(o.get("data", {}).get(book.get("mime_prefix", "") + "text/plain", ""))
                try:
                    return str(ast.literal_eval(text))
                except (ValueError, SyntaxError):
                    return text
    return None


def statuses(root: Path = ROOT) -> dict:
    """``{claim id: (chapter stem, status)}`` for every ``status-<ID>`` the chapters glue."""
    out = {}
    for nb in chapters(root):
        for name in sorted(glued_keys(nb)):
            if name.startswith("status-") and name[len("status-"):] in BY_ID:
                out[name[len("status-"):]] = (nb.stem, glued_text(nb, name))
    return out


def template_keys(template: str) -> list:
    return [k for k, _ in _KEY.findall(template)]


def paste(stem: str, template: str) -> str:
    """A template's {key:format} as myst-nb glue roles that read chapter ``stem``'s outputs."""
    return _KEY.sub(lambda m: f"{{glue:text}}`{stem}.ipynb::{m.group(1)}:{m.group(2) or 's'}`", template)


def measurement(claim: Claim, root: Path = ROOT) -> str:
    """The page's measurement line: the claim's template, else the chapters' ``claim-<ID>`` glue."""
    if claim.context:
        return "nothing to measure: the paper's results, quoted for context"
    if claim.measured:
        stem, template = claim.measured
        return f"{paste(stem, template)} (in {{doc}}`{stem}`)"
    for nb in chapters(root):
        if f"claim-{claim.id}" in glued_keys(nb):
            return f"{paste(nb.stem, '{claim-' + claim.id + '}')} (in {{doc}}`{nb.stem}`)"
    return "not measured yet"


def verdict_tally(effects_) -> str:
    """'2 of 6 reproduce, 4 are not resolved at this scale': the verdicts of ``effects_``
    (Effects, or verdict words such as :meth:`tfx.book.evidence.Comparison.verdict` gives,
    *not testable at this scale* among them)."""
    verdicts = [e if isinstance(e, str) else e.verdict for e in effects_]
    if not verdicts:
        raise ValueError("effects_ must hold at least one Effect")
    parts = []
    for v in ("reproduces", "reversed", "not resolved at this scale", "not testable at this scale"):
        n = verdicts.count(v)
        if n:
            of = "" if parts else f" of {len(verdicts)}"
            verb = {"reproduces": (v, "reproduce")}.get(v, (f"is {v}", f"are {v}"))[n != 1]
            parts.append(f"{n}{of} {verb}")
    return ", ".join(parts)
