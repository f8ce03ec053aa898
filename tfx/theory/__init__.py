"""The theory wing: what the papers predict, each beside the probe that measures it.
It uses the model wing (tfx.nn) and nothing else of tfx; nothing here draws.

    jacobian    what does LayerNorm's Jacobian do to a gradient?                (LN-1)
    hidden      how large does the hidden state grow at initialisation?        (LN-2, LN-3)
    gradients   how large are the gradients at initialisation, layer by layer,
                and the updates Adam and SGD make from them?                   (LN-4, LN-5, GV-1, GV-3)
    dependency  how much does each sub-layer's output depend on each branch?   (AM-1, AD-1)
    change      how much does the output move when the weights move?           (AM-2, AD-2)
    bounds      how large can an update or a residual be? (T-Fixup, Lipschitz)  (TF-1, LP-1…3)
    scaling     how should the residual be scaled with depth? (ReZero, DeepNorm) (RZ-1, DN-1)
    adam        Adam's first steps, RAdam's rectification                      (WU-3)
    logits      what bounds an attention logit; what log Z is free to do        (LG-1, ZL-1)
    fit         does a measurement follow the predicted shape? (line and power-law fits)
"""
